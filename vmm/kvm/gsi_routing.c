#include "gsi_routing.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "base/log.h"

struct msi_route {
	uint32_t addr_lo, addr_hi, data;
	bool used, masked;
};

struct gsi_routing {
	pthread_mutex_t lock;
	int vm_fd;
	bool dirty; /* the table differs from what KVM has */
	struct msi_route msi[GSI_MAX_MSI];
};

struct gsi_routing *gsi_routing_create(int vm_fd)
{
	struct gsi_routing *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->vm_fd = vm_fd;
	return r;
}

void gsi_routing_destroy(struct gsi_routing *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static struct msi_route *route(struct gsi_routing *r, int gsi)
{
	if (gsi < GSI_FIRST_MSI || gsi >= GSI_FIRST_MSI + GSI_MAX_MSI)
		return NULL;
	struct msi_route *m = &r->msi[gsi - GSI_FIRST_MSI];
	return m->used ? m : NULL;
}

int gsi_route_msi_alloc(struct gsi_routing *r)
{
	int gsi = -1;
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < GSI_MAX_MSI && gsi < 0; i++) {
		if (!r->msi[i].used) {
			r->msi[i] = (struct msi_route){.used = true, .masked = true};
			gsi = GSI_FIRST_MSI + i;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return gsi;
}

void gsi_route_msi_free(struct gsi_routing *r, int gsi)
{
	pthread_mutex_lock(&r->lock);
	struct msi_route *m = route(r, gsi);
	if (m) {
		r->dirty |= !m->masked;
		*m = (struct msi_route){0};
	}
	pthread_mutex_unlock(&r->lock);
}

int gsi_route_msi_set(struct gsi_routing *r, int gsi, uint32_t addr_lo, uint32_t addr_hi,
		      uint32_t data)
{
	pthread_mutex_lock(&r->lock);
	struct msi_route *m = route(r, gsi);
	if (m && (m->addr_lo != addr_lo || m->addr_hi != addr_hi || m->data != data)) {
		m->addr_lo = addr_lo;
		m->addr_hi = addr_hi;
		m->data = data;
		r->dirty |= !m->masked;
	}
	pthread_mutex_unlock(&r->lock);
	return m ? 0 : -1;
}

int gsi_route_msi_mask(struct gsi_routing *r, int gsi, bool masked)
{
	pthread_mutex_lock(&r->lock);
	struct msi_route *m = route(r, gsi);
	if (m && m->masked != masked) {
		m->masked = masked;
		r->dirty = true;
	}
	pthread_mutex_unlock(&r->lock);
	return m ? 0 : -1;
}

static int entries_locked(struct gsi_routing *r, struct kvm_irq_routing_entry *e, int max)
{
	int n = 0;
#define ADD(entry)                                                                                 \
	do {                                                                                       \
		if (n < max)                                                                       \
			e[n] = (entry);                                                            \
		n++;                                                                               \
	} while (0)
	for (uint32_t gsi = 0; gsi < GSI_IRQCHIP_PINS; gsi++) {
		/* KVM's default: ISA IRQs reach both PICs and the IOAPIC, 16-23 the IOAPIC. */
		if (gsi < 16)
			ADD(((struct kvm_irq_routing_entry){
			    .gsi = gsi,
			    .type = KVM_IRQ_ROUTING_IRQCHIP,
			    .u.irqchip = {.irqchip = gsi < 8 ? KVM_IRQCHIP_PIC_MASTER
							     : KVM_IRQCHIP_PIC_SLAVE,
					  .pin = gsi % 8}}));
		ADD(((struct kvm_irq_routing_entry){
		    .gsi = gsi,
		    .type = KVM_IRQ_ROUTING_IRQCHIP,
		    .u.irqchip = {.irqchip = KVM_IRQCHIP_IOAPIC, .pin = gsi}}));
	}
	for (int i = 0; i < GSI_MAX_MSI; i++) {
		const struct msi_route *m = &r->msi[i];
		if (!m->used || m->masked)
			continue;
		ADD(((struct kvm_irq_routing_entry){.gsi = (uint32_t)(GSI_FIRST_MSI + i),
						    .type = KVM_IRQ_ROUTING_MSI,
						    .u.msi = {.address_lo = m->addr_lo,
							      .address_hi = m->addr_hi,
							      .data = m->data}}));
	}
#undef ADD
	return n;
}

int gsi_routing_entries(struct gsi_routing *r, struct kvm_irq_routing_entry *e, int max)
{
	pthread_mutex_lock(&r->lock);
	int n = entries_locked(r, e, max);
	pthread_mutex_unlock(&r->lock);
	return n;
}

int gsi_routing_commit(struct gsi_routing *r)
{
	int rc = 0;
	pthread_mutex_lock(&r->lock);
	if (!r->dirty || r->vm_fd < 0) {
		r->dirty = false;
		goto out;
	}
	struct kvm_irq_routing *t =
	    calloc(1, sizeof(*t) + GSI_MAX_ENTRIES * sizeof(struct kvm_irq_routing_entry));
	if (!t) {
		rc = -1;
		goto out;
	}
	t->nr = (uint32_t)entries_locked(r, t->entries, GSI_MAX_ENTRIES);
	if (ioctl(r->vm_fd, KVM_SET_GSI_ROUTING, t) < 0) {
		log_error("KVM_SET_GSI_ROUTING (%u routes): %s", t->nr, strerror(errno));
		rc = -1;
	} else {
		r->dirty = false;
	}
	free(t);
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
}
