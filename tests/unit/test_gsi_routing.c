/* The VMM's copy of KVM's GSI routing table: default irqchip routes plus MSI routes. */
#include <criterion/criterion.h>

#include "vmm/kvm/gsi_routing.h"

static struct kvm_irq_routing_entry e[GSI_MAX_ENTRIES];

Test(gsi_routing, default_irqchip_routes)
{
	struct gsi_routing *r = gsi_routing_create(-1);
	cr_assert(r);
	int n = gsi_routing_entries(r, e, GSI_MAX_ENTRIES);
	cr_assert_eq(n, 16 * 2 + 8, "GSI 0-15: PIC and IOAPIC; 16-23: IOAPIC");
	int pic = 0, ioapic = 0;
	for (int i = 0; i < n; i++) {
		cr_assert_eq(e[i].type, KVM_IRQ_ROUTING_IRQCHIP);
		if (e[i].u.irqchip.irqchip == KVM_IRQCHIP_IOAPIC) {
			cr_assert_eq(e[i].u.irqchip.pin, e[i].gsi);
			ioapic++;
		} else {
			cr_assert_lt(e[i].gsi, 16);
			cr_assert_eq(e[i].u.irqchip.irqchip,
				     e[i].gsi < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE);
			cr_assert_eq(e[i].u.irqchip.pin, e[i].gsi % 8);
			pic++;
		}
	}
	cr_assert_eq(pic, 16);
	cr_assert_eq(ioapic, 24);
	gsi_routing_destroy(r);
}

Test(gsi_routing, msi_routes_appear_when_unmasked)
{
	struct gsi_routing *r = gsi_routing_create(-1);
	int a = gsi_route_msi_alloc(r), b = gsi_route_msi_alloc(r);
	cr_assert_eq(a, 24);
	cr_assert_eq(b, 25);
	cr_assert_eq(gsi_route_msi_set(r, a, 0xfee00000, 0, 0x31), 0);
	cr_assert_eq(gsi_routing_entries(r, e, GSI_MAX_ENTRIES), 40, "masked routes stay out");
	cr_assert_eq(gsi_route_msi_mask(r, a, false), 0);
	cr_assert_eq(gsi_routing_entries(r, e, GSI_MAX_ENTRIES), 41);
	cr_assert_eq(e[40].gsi, 24);
	cr_assert_eq(e[40].type, KVM_IRQ_ROUTING_MSI);
	cr_assert_eq(e[40].u.msi.address_lo, 0xfee00000);
	cr_assert_eq(e[40].u.msi.data, 0x31);
	cr_assert_eq(gsi_routing_commit(r), 0);
	/* Bad GSIs are refused. */
	cr_assert_neq(gsi_route_msi_set(r, 5, 0, 0, 0), 0);
	cr_assert_neq(gsi_route_msi_set(r, 26, 0, 0, 0), 0, "not allocated");
	cr_assert_neq(gsi_route_msi_mask(r, 100000, false), 0);
	/* Freed GSIs are reused. */
	gsi_route_msi_free(r, a);
	cr_assert_eq(gsi_routing_entries(r, e, GSI_MAX_ENTRIES), 40);
	cr_assert_eq(gsi_route_msi_alloc(r), 24);
	gsi_routing_destroy(r);
}

Test(gsi_routing, runs_out)
{
	struct gsi_routing *r = gsi_routing_create(-1);
	for (int i = 0; i < GSI_MAX_MSI; i++) {
		int g = gsi_route_msi_alloc(r);
		cr_assert_eq(g, GSI_FIRST_MSI + i);
		gsi_route_msi_mask(r, g, false);
	}
	cr_assert_eq(gsi_route_msi_alloc(r), -1);
	cr_assert_eq(gsi_routing_entries(r, e, GSI_MAX_ENTRIES), GSI_MAX_ENTRIES);
	gsi_routing_destroy(r);
}
