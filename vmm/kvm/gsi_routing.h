/* KVM's GSI routing table as the VMM keeps it. KVM_SET_GSI_ROUTING replaces the whole table, so
 * the default irqchip routes (GSI 0-15 to the PICs and IOAPIC pins, 16-23 to the IOAPIC) are
 * kept alongside the MSI routes devices allocate (GSI 24 and up). Thread-safe. */
#ifndef MINIVMM_GSI_ROUTING_H
#define MINIVMM_GSI_ROUTING_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

#define GSI_IRQCHIP_PINS 24 /* IOAPIC pins; 0-15 also reach the PICs */
#define GSI_FIRST_MSI	 GSI_IRQCHIP_PINS
#define GSI_MAX_MSI	 1024 /* well below KVM_MAX_IRQ_ROUTES (4096) */
#define GSI_MAX_ENTRIES	 (16 * 2 + 8 + GSI_MAX_MSI)

struct gsi_routing;

/* vm_fd < 0 keeps the table without telling KVM (unit tests). NULL on allocation failure. */
struct gsi_routing *gsi_routing_create(int vm_fd);
void gsi_routing_destroy(struct gsi_routing *r);

/* A new MSI route, masked (absent from KVM's table) until set and unmasked. Returns its GSI
 * (>= GSI_FIRST_MSI) or -1 when none is left. */
int gsi_route_msi_alloc(struct gsi_routing *r);
void gsi_route_msi_free(struct gsi_routing *r, int gsi);
/* Message address and data, as in an MSI-X table entry. Returns 0, or -1 for a GSI that is not
 * an allocated MSI route. Takes effect at the next commit. */
int gsi_route_msi_set(struct gsi_routing *r, int gsi, uint32_t addr_lo, uint32_t addr_hi,
		      uint32_t data);
/* A masked route is left out of KVM's table: its irqfd then raises nothing. 0 or -1. */
int gsi_route_msi_mask(struct gsi_routing *r, int gsi, bool masked);
/* Hand the table to KVM (KVM_SET_GSI_ROUTING) if it changed since the last commit. 0 or -1. */
int gsi_routing_commit(struct gsi_routing *r);

/* The table a commit would send: fills up to max entries, returns how many there are. */
int gsi_routing_entries(struct gsi_routing *r, struct kvm_irq_routing_entry *e, int max);

#endif
