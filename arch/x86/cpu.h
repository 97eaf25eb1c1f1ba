/* x86 vCPU state: boot page tables and GDT, entry registers, CPUID, MSRs, LAPIC. */
#ifndef MINIVMM_X86_CPU_H
#define MINIVMM_X86_CPU_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/boot.h"
#include "base/guest_mem.h"

/* Write the boot GDT, empty IDT and identity page tables (4 GiB, 2 MiB pages, U/S=1 at every
 * level as ../shared/PLATFORM.md requires). Returns 0 or -1 if RAM is too small. */
int x86_setup_boot_tables(struct guest_mem *mem);
/* Per-vCPU state every vCPU needs: CPUID, MSRs, FPU, LAPIC LINT0/1. */
int x86_vcpu_init(const struct kvm_cpuid2 *supported, int vcpu_fd, int index, int nr_cpus);
/* Registers for the boot vCPU to enter the kernel described by entry. */
int x86_vcpu_set_boot_regs(int vcpu_fd, const struct boot_entry *entry);
/* Log RIP, mode and the instruction bytes at RIP (for internal errors). */
void x86_vcpu_dump(int vcpu_fd, const struct guest_mem *mem);
/* The architectural reset state (real mode at F000:FFF0): what KVM on AMD leaves after a
 * triple fault, so the state at the fault is gone. */
bool x86_vcpu_at_reset_vector(const struct kvm_regs *regs, const struct kvm_sregs *sregs);

#endif
