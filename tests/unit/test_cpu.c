#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "arch/x86/cpu.h"
#include "arch/x86/host_cpuid.h"

/* After a triple fault, KVM on AMD hands back the reset state; the dump must say the state at
 * the fault is lost rather than print F000:FFF0 as if the guest were there. */
Test(vcpu_dump, reset_state_is_recognised)
{
	struct kvm_regs regs = {.rip = 0xfff0};
	struct kvm_sregs sregs = {.cr0 = 0x60000010, .cs = {.selector = 0xf000}};
	cr_assert(x86_vcpu_at_reset_vector(&regs, &sregs));
}

Test(vcpu_dump, a_guest_state_is_not_taken_for_a_reset)
{
	struct kvm_regs regs = {.rip = 0xfff0};
	struct kvm_sregs sregs = {.cr0 = 0x80050033, .cs = {.selector = 0xf000}};
	cr_assert(!x86_vcpu_at_reset_vector(&regs, &sregs), "protected mode is no reset state");
	sregs.cr0 = 0x10;
	regs.rip = 0xfff1;
	cr_assert(!x86_vcpu_at_reset_vector(&regs, &sregs));
	regs.rip = 0xfff0;
	sregs.cs.selector = 0x10;
	cr_assert(!x86_vcpu_at_reset_vector(&regs, &sregs));
}

/* KVM's supported CPUID is asked once per VM (each ask costs ~0.4 ms where the host is a VM):
 * every vCPU after the first gets the same table. */
Test(host_cpuid, fetched_once_and_shared)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		cr_skip_test("no /dev/kvm: %s", strerror(errno));
	struct host_cpuid h = {0};
	const struct kvm_cpuid2 *first = host_cpuid_get(&h, kvm);
	cr_assert_not_null(first);
	cr_assert_gt(first->nent, 0);
	cr_assert_lt(first->nent, HOST_CPUID_MAX_ENTRIES, "no room left for the leaf we add");
	close(kvm);
	/* The fd is closed now: a second ask of KVM would fail. */
	cr_assert_eq(host_cpuid_get(&h, kvm), first, "asked KVM again");
	host_cpuid_destroy(&h);
	cr_assert_null(h.table);
}

/* A refusal is final too: it is not asked again for every vCPU. */
Test(host_cpuid, a_refusal_is_reported_as_null)
{
	struct host_cpuid h = {0};
	cr_assert_null(host_cpuid_get(&h, -1));
	cr_assert(h.fetched);
	host_cpuid_destroy(&h);
}
