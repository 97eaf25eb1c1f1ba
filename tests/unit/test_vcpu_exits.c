/* KVM_RUN exit accounting: each exit reason's class, and the per-vCPU counters it feeds. */
#include <criterion/criterion.h>
#include <linux/kvm.h>

#include "vmm/kvm/vcpu.h"

Test(vcpu_exits, classes)
{
	cr_assert_eq(vcpu_exit_class(KVM_EXIT_IO), VCPU_EXIT_IO);
	cr_assert_eq(vcpu_exit_class(KVM_EXIT_MMIO), VCPU_EXIT_MMIO);
	cr_assert_eq(vcpu_exit_class(KVM_EXIT_HLT), VCPU_EXIT_HLT);
	static const uint32_t others[] = {
	    KVM_EXIT_INTR,	 KVM_EXIT_SHUTDOWN,	  KVM_EXIT_SYSTEM_EVENT,
	    KVM_EXIT_FAIL_ENTRY, KVM_EXIT_INTERNAL_ERROR, KVM_EXIT_UNKNOWN,
	    0xffffffffu};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		cr_assert_eq(vcpu_exit_class(others[i]), VCPU_EXIT_OTHER, "reason %u", others[i]);
}

Test(vcpu_exits, counted_per_vcpu_and_class)
{
	static struct vcpu a, b;
	for (int i = 0; i < 1000; i++)
		vcpu_count_exit(&a, KVM_EXIT_MMIO);
	vcpu_count_exit(&a, KVM_EXIT_IO);
	vcpu_count_exit(&b, KVM_EXIT_HLT);
	vcpu_count_exit(&b, KVM_EXIT_INTR);
	vcpu_count_exit(&b, KVM_EXIT_INTR);
	cr_assert_eq(vcpu_exits(&a, VCPU_EXIT_MMIO), 1000);
	cr_assert_eq(vcpu_exits(&a, VCPU_EXIT_IO), 1);
	cr_assert_eq(vcpu_exits(&a, VCPU_EXIT_HLT), 0);
	cr_assert_eq(vcpu_exits(&a, VCPU_EXIT_OTHER), 0);
	cr_assert_eq(vcpu_exits(&b, VCPU_EXIT_HLT), 1);
	cr_assert_eq(vcpu_exits(&b, VCPU_EXIT_OTHER), 2);
	cr_assert_eq(vcpu_exits(&b, VCPU_EXIT_MMIO), 0);
}
