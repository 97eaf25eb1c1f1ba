/* CPUID the guest sees: what KVM supports, adjusted for topology and our TSC leaf. */
#ifndef MINIVMM_X86_CPUID_H
#define MINIVMM_X86_CPUID_H

#include <linux/kvm.h>

/* Leaf that carries the TSC frequency in kHz in EAX (the VMware/KVM "timing" leaf). */
#define CPUID_LEAF_TSC_KHZ 0x40000010

/* Adjust entries in place for vCPU index of nr_cpus (one core per vCPU, one socket). */
void x86_cpuid_adjust(struct kvm_cpuid2 *cpuid, unsigned max_entries, int index, int nr_cpus,
		      unsigned tsc_khz);
/* KVM's supported table (host_cpuid_get; NULL: fail), adjusted, onto the vCPU. */
int x86_cpuid_setup(const struct kvm_cpuid2 *supported, int vcpu_fd, int index, int nr_cpus);

#endif
