/* KVM's supported CPUID table, fetched once per VM (host_cpuid.h says why). */
#include "host_cpuid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "base/log.h"

const struct kvm_cpuid2 *host_cpuid_get(struct host_cpuid *h, int kvm_fd)
{
	if (h->fetched)
		return h->table;
	h->fetched = true;
	size_t size =
	    sizeof(struct kvm_cpuid2) + HOST_CPUID_MAX_ENTRIES * sizeof(struct kvm_cpuid_entry2);
	struct kvm_cpuid2 *t = calloc(1, size);
	if (!t) {
		log_error("out of memory");
		return NULL;
	}
	t->nent = HOST_CPUID_MAX_ENTRIES - 1; /* room for the one leaf x86_cpuid_adjust adds */
	if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, t) < 0) {
		log_error("KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
		free(t);
		return NULL;
	}
	h->table = t;
	return t;
}

void host_cpuid_destroy(struct host_cpuid *h)
{
	free(h->table);
	*h = (struct host_cpuid){0};
}
