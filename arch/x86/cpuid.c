#include "cpuid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch/x86/host_cpuid.h"
#include "base/log.h"

#define CPUID_MAX_ENTRIES HOST_CPUID_MAX_ENTRIES

static struct kvm_cpuid_entry2 *find_leaf(struct kvm_cpuid2 *cpuid, unsigned function,
					  unsigned index)
{
	for (unsigned i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
		if (e->function == function && e->index == index)
			return e;
	}
	return NULL;
}

static unsigned bits_for(unsigned n)
{
	unsigned b = 0;
	while ((1u << b) < n)
		b++;
	return b;
}

void x86_cpuid_adjust(struct kvm_cpuid2 *cpuid, unsigned max_entries, int index, int nr_cpus,
		      unsigned tsc_khz)
{
	unsigned apic_id = (unsigned)index;
	for (unsigned i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
		switch (e->function) {
		case 1:
			/* EBX[31:24] initial APIC id, [23:16] logical processors per package. */
			e->ebx = (e->ebx & 0xffff) | ((unsigned)nr_cpus << 16) | (apic_id << 24);
			if (nr_cpus > 1)
				e->edx |= 1u << 28; /* HTT: the count above is valid */
			e->ecx |= 1u << 31;	    /* running under a hypervisor */
			break;
		case 4:
			/* Cores per package - 1 in EAX[31:26]; no threads share a cache. */
			e->eax = (e->eax & 0x3ff) | (((unsigned)nr_cpus - 1) << 26);
			break;
		case 0xb: {
			/* x2APIC topology: level 0 SMT (1 thread), level 1 core (nr_cpus). */
			unsigned shift = e->index == 0 ? 0 : bits_for((unsigned)nr_cpus);
			unsigned count = e->index == 0 ? 1 : (unsigned)nr_cpus;
			if (e->index > 1) {
				e->eax = e->ebx = 0;
				e->ecx = e->index;
			} else {
				e->eax = shift;
				e->ebx = count;
				e->ecx = e->index | ((e->index + 1) << 8);
			}
			e->edx = apic_id;
			break;
		}
		default:
			break;
		}
	}
	if (!tsc_khz)
		return;
	struct kvm_cpuid_entry2 *hv = find_leaf(cpuid, 0x40000000, 0);
	if (hv && hv->eax < CPUID_LEAF_TSC_KHZ)
		hv->eax = CPUID_LEAF_TSC_KHZ;
	struct kvm_cpuid_entry2 *leaf = find_leaf(cpuid, CPUID_LEAF_TSC_KHZ, 0);
	if (!leaf && cpuid->nent < max_entries) {
		leaf = &cpuid->entries[cpuid->nent++];
		memset(leaf, 0, sizeof(*leaf));
		leaf->function = CPUID_LEAF_TSC_KHZ;
	}
	if (leaf) {
		leaf->eax = tsc_khz;
		leaf->ebx = 1000000; /* LAPIC timer (bus) frequency in kHz: KVM uses 1 GHz */
	}
}

int x86_cpuid_setup(const struct kvm_cpuid2 *supported, int vcpu_fd, int index, int nr_cpus)
{
	if (!supported)
		return -1; /* host_cpuid_get said why */
	size_t size =
	    sizeof(struct kvm_cpuid2) + CPUID_MAX_ENTRIES * sizeof(struct kvm_cpuid_entry2);
	struct kvm_cpuid2 *cpuid = calloc(1, size);
	if (!cpuid) {
		log_error("out of memory");
		return -1;
	}
	int rc = -1;
	/* A copy per vCPU: the adjustments differ (APIC IDs); room is left for the leaf we add. */
	unsigned nent =
	    supported->nent < CPUID_MAX_ENTRIES - 1 ? supported->nent : CPUID_MAX_ENTRIES - 1;
	cpuid->nent = nent;
	memcpy(cpuid->entries, supported->entries, nent * sizeof(struct kvm_cpuid_entry2));
	int khz = ioctl(vcpu_fd, KVM_GET_TSC_KHZ, 0);
	x86_cpuid_adjust(cpuid, CPUID_MAX_ENTRIES, index, nr_cpus, khz > 0 ? (unsigned)khz : 0);
	if (ioctl(vcpu_fd, KVM_SET_CPUID2, cpuid) < 0) {
		log_error("KVM_SET_CPUID2: %s", strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(cpuid);
	return rc;
}
