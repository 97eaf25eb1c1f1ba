#include <criterion/criterion.h>

#include "arch/x86/cpu.h"

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
