/* KVM's supported CPUID table (KVM_GET_SUPPORTED_CPUID), fetched once per VM and shared by its
 * vCPUs: the ioctl runs CPUID for every leaf, each a VM exit where the host is itself a VM
 * (~0.3-0.4 ms on the development VMs, the largest single step of a vCPU's set-up). */
#ifndef MINIVMM_X86_HOST_CPUID_H
#define MINIVMM_X86_HOST_CPUID_H

#include <linux/kvm.h>
#include <stdbool.h>

struct host_cpuid {
	bool fetched;		  /* asked once: table or failure is final */
	struct kvm_cpuid2 *table; /* owned; NULL until fetched, or on failure */
};

/* The table's capacity in entries (one more than KVM may fill: room for a leaf we add). */
#define HOST_CPUID_MAX_ENTRIES 256

/* The table, fetched on the first call: NULL (logged once) if KVM refused. */
const struct kvm_cpuid2 *host_cpuid_get(struct host_cpuid *h, int kvm_fd);
void host_cpuid_destroy(struct host_cpuid *h);

#endif
