/* The virtio-pci transport against a fake device: identity and capabilities, common
 * configuration semantics (virtio 1.2, 4.1.4.3), ISR and INTx, MSI-X vectors and routes,
 * device configuration bounds, kicks (trapped and through the I/O thread's eventfds). */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "arch/x86/layout.h"
#include "devices/pci.h"
#include "devices/virtio/pci.h"
#include "x86_test_util.h"

#define BAR PCI_MMIO_BASE

/* ---- the fake device ---- */

static uint8_t fake_cfg[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static int config_reads, config_writes, kicks[4], activations;

static void fake_read_config(struct virtio_dev *dev, uint32_t off, uint8_t *data, uint32_t len)
{
	(void)dev;
	config_reads++;
	memcpy(data, fake_cfg + off, len);
}

static void fake_write_config(struct virtio_dev *dev, uint32_t off, const uint8_t *data,
			      uint32_t len)
{
	(void)dev;
	config_writes++;
	memcpy(fake_cfg + off, data, len);
}

static int fake_activate(struct virtio_dev *dev)
{
	(void)dev;
	activations++;
	return 0;
}

static void fake_queue_notify(struct virtio_dev *dev, int q)
{
	(void)dev;
	kicks[q]++;
}

static const struct virtio_device_ops fake_ops = {
    .name = "fake",
    .device_id = VIRTIO_ID_RNG,
    .max_queue_size = 256,
    .config_size = sizeof(fake_cfg),
    .read_config = fake_read_config,
    .write_config = fake_write_config,
    .activate = fake_activate,
    .queue_notify = fake_queue_notify,
};

static const struct virtio_dev_params fake_params = {
    .features = 1ULL << 3 | 1ULL << VIRTIO_RING_F_EVENT_IDX,
    .nr_queues = 2,
};

/* ---- the fake VM ---- */

static int irq_level[32], irq_changes;

static void host_set_irq(void *opaque, int gsi, int level)
{
	(void)opaque;
	cr_assert(gsi >= 16 && gsi < 24, "INTx on an IOAPIC-only GSI, got %d", gsi);
	irq_level[gsi] = level;
	irq_changes++;
}

/* Its MSI routes, GSI FIRST_MSI and up: what the transport set up, and what the last commit
 * handed to "KVM" (only live, i.e. set and unmasked, routes raise anything). */
#define FIRST_MSI 24
#define MAX_MSI	  8
struct fake_route {
	bool used, live;
	uint32_t addr_lo, addr_hi, data;
};
static struct fake_route routes[MAX_MSI], committed[MAX_MSI];

static int host_msi_route_alloc(void *opaque)
{
	(void)opaque;
	for (int i = 0; i < MAX_MSI; i++) {
		if (!routes[i].used) {
			routes[i] = (struct fake_route){.used = true};
			return FIRST_MSI + i;
		}
	}
	return -1;
}

static struct fake_route *route(int gsi)
{
	cr_assert(gsi >= FIRST_MSI && gsi < FIRST_MSI + MAX_MSI && routes[gsi - FIRST_MSI].used,
		  "GSI %d is no allocated MSI route", gsi);
	return &routes[gsi - FIRST_MSI];
}

static void host_msi_route_free(void *opaque, int gsi)
{
	(void)opaque;
	*route(gsi) = (struct fake_route){0};
}

static int host_msi_route_set(void *opaque, int gsi, uint32_t addr_lo, uint32_t addr_hi,
			      uint32_t data)
{
	(void)opaque;
	*route(gsi) = (struct fake_route){
	    .used = true, .live = true, .addr_lo = addr_lo, .addr_hi = addr_hi, .data = data};
	return 0;
}

static int commits; /* KVM_SET_GSI_ROUTING calls: each replaces KVM's whole table */
static bool commit_fails;

static int host_msi_route_commit(void *opaque)
{
	(void)opaque;
	commits++;
	if (commit_fails)
		return -1;
	memcpy(committed, routes, sizeof(routes));
	return 0;
}

static int irqfds_bound;

static int host_irqfd(void *opaque, int gsi, int fd, bool add)
{
	(void)opaque;
	route(gsi);
	cr_assert_geq(fd, 0);
	irqfds_bound += add ? 1 : -1;
	return 0;
}

static struct test_ram ram;
static struct io_bus mmio, pio;
static struct pci_bus bus;
static struct virtio_dev dev;
static struct virtio_pci vp;
static int slot;

static void make(const struct virtio_device_ops *ops, struct event_loop *loop,
		 int (*ioeventfd)(void *, uint64_t, uint32_t, bool, uint64_t, int, bool))
{
	test_ram_init(&ram, 16 * MiB);
	io_bus_init(&mmio);
	io_bus_init(&pio);
	pci_bus_init(&bus, &mmio, PCI_MMIO_BASE, PCI_MMIO_END);
	cr_assert_eq(pci_bus_register(&bus, &pio, PCI_ECAM_BASE), 0);
	memset(routes, 0, sizeof(routes));
	memset(committed, 0, sizeof(committed));
	commits = 0;
	commit_fails = false;
	virtio_dev_init(&dev, ops, &fake_params, NULL, &ram.mem, loop, "fake0");
	struct virtio_transport_host host = {.set_irq = host_set_irq,
					     .irqfd = host_irqfd,
					     .ioeventfd = ioeventfd,
					     .msi_route_alloc = host_msi_route_alloc,
					     .msi_route_free = host_msi_route_free,
					     .msi_route_set = host_msi_route_set,
					     .msi_route_commit = host_msi_route_commit,
					     .loop = loop};
	char err[128];
	cr_assert_eq(virtio_pci_init(&vp, &dev, &host, err, sizeof(err)), 0, "%s", err);
	slot = pci_bus_add_device(&bus, &vp.pci);
	cr_assert_geq(slot, 1);
}

static uint32_t cfg_read(uint32_t reg, uint32_t len)
{
	uint8_t d[4] = {0};
	pci_bus_ecam_io(&bus, (uint64_t)slot << 15 | reg, d, len, false);
	return (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
}

static void cfg_write(uint32_t reg, uint32_t len, uint32_t v)
{
	uint8_t d[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	pci_bus_ecam_io(&bus, (uint64_t)slot << 15 | reg, d, len, true);
}

static void setup(void)
{
	make(&fake_ops, NULL, NULL);
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
}

static void teardown(void)
{
	pci_bus_destroy(&bus);
	virtio_pci_cleanup(&vp);
	io_bus_destroy(&mmio);
	io_bus_destroy(&pio);
	test_ram_fini(&ram);
}

TestSuite(virtio_pci, .init = setup, .fini = teardown);

static uint64_t rd(uint64_t off, uint32_t len)
{
	uint8_t d[8] = {0};
	cr_assert(io_bus_access(&mmio, BAR + off, d, len, false), "BAR 0 decodes 0x%llx",
		  (unsigned long long)off);
	uint64_t v = 0;
	for (uint32_t i = 0; i < len; i++)
		v |= (uint64_t)d[i] << (8 * i);
	return v;
}

static void wr(uint64_t off, uint32_t len, uint64_t v)
{
	uint8_t d[8];
	for (uint32_t i = 0; i < 8; i++)
		d[i] = (uint8_t)(v >> (8 * i));
	cr_assert(io_bus_access(&mmio, BAR + off, d, len, true));
}

#define COMMON(f) (VIRTIO_PCI_COMMON_OFF + VIRTIO_PCI_COMMON_##f)

static uint8_t status(void)
{
	return (uint8_t)rd(COMMON(STATUS), 1);
}

/* Driver init up to FEATURES_OK (virtio 1.2, 3.1.1), accepting what is offered. */
static void negotiate(void)
{
	wr(COMMON(STATUS), 1, VIRTIO_STATUS_ACKNOWLEDGE);
	wr(COMMON(STATUS), 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	for (uint32_t sel = 0; sel < 2; sel++) {
		wr(COMMON(DFSELECT), 4, sel);
		uint64_t f = rd(COMMON(DF), 4);
		wr(COMMON(GFSELECT), 4, sel);
		wr(COMMON(GF), 4, f);
	}
	wr(COMMON(STATUS), 1,
	   VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK);
	cr_assert(status() & VIRTIO_STATUS_FEATURES_OK);
}

static void setup_queue(int q, uint64_t base)
{
	wr(COMMON(Q_SELECT), 2, (uint64_t)q);
	wr(COMMON(Q_SIZE), 2, 64);
	wr(COMMON(Q_DESC), 4, base);
	wr(COMMON(Q_DESC) + 4, 4, 0);
	wr(COMMON(Q_DRIVER), 8, base + 0x1000);
	wr(COMMON(Q_DEVICE), 4, base + 0x2000);
	wr(COMMON(Q_DEVICE) + 4, 4, 0);
	wr(COMMON(Q_ENABLE), 2, 1);
}

static void driver_ok(void)
{
	negotiate();
	setup_queue(0, 0x100000);
	setup_queue(1, 0x200000);
	wr(COMMON(STATUS), 1, status() | VIRTIO_STATUS_DRIVER_OK);
	cr_assert(status() & VIRTIO_STATUS_DRIVER_OK);
}

/* ---- identity and capabilities ---- */

Test(virtio_pci, identity)
{
	cr_assert_eq(cfg_read(PCI_VENDOR_ID, 2), 0x1af4);
	cr_assert_eq(cfg_read(PCI_DEVICE_ID, 2), 0x1040 + VIRTIO_ID_RNG);
	cr_assert_eq(cfg_read(PCI_REVISION_ID, 1), 1);
	cr_assert_eq(cfg_read(PCI_CLASS_PROG, 4) & 0xffffff, 0xff0000);
	cr_assert_eq(cfg_read(PCI_SUBSYS_VENDOR, 2), 0x1af4);
	cr_assert_geq(cfg_read(PCI_SUBSYS_ID, 2), 0x40);
	cr_assert_eq(cfg_read(PCI_INTERRUPT_PIN, 1), 1);
	/* BAR 0: 64-bit memory, 16 KiB. */
	cr_assert_eq(cfg_read(PCI_BAR0, 4), (uint32_t)BAR | PCI_BAR_MEM_64);
	cfg_write(PCI_BAR0, 4, 0xffffffff);
	cfg_write(PCI_BAR0 + 4, 4, 0xffffffff);
	cr_assert_eq(cfg_read(PCI_BAR0, 4), (uint32_t) ~(VIRTIO_PCI_BAR_SIZE - 1) | PCI_BAR_MEM_64);
	cr_assert_eq(cfg_read(PCI_BAR0 + 4, 4), 0xffffffff);
}

Test(virtio_pci, class_code_by_device_type)
{
	teardown();
	struct virtio_device_ops net = fake_ops;
	net.device_id = VIRTIO_ID_NET;
	make(&net, NULL, NULL);
	cr_assert_eq(cfg_read(PCI_REVISION_ID, 4) >> 8, 0x020000);
	cr_assert_eq(cfg_read(PCI_DEVICE_ID, 2), 0x1041);
	teardown();
	struct virtio_device_ops blk = fake_ops;
	blk.device_id = VIRTIO_ID_BLOCK;
	make(&blk, NULL, NULL);
	cr_assert_eq(cfg_read(PCI_REVISION_ID, 4) >> 8, 0x010000);
}

Test(virtio_pci, capabilities)
{
	struct {
		uint32_t off, len;
		bool seen;
	} want[7] = {[1] = {VIRTIO_PCI_COMMON_OFF, 0x38},
		     [2] = {VIRTIO_PCI_NOTIFY_OFF, 2 * 4},
		     [3] = {VIRTIO_PCI_ISR_OFF, VIRTIO_PCI_ISR_LEN},
		     [4] = {VIRTIO_PCI_DEVICE_OFF, sizeof(fake_cfg)}};
	bool msix = false;
	cr_assert(cfg_read(PCI_STATUS, 2) & PCI_STATUS_CAP_LIST);
	int n = 0;
	for (uint32_t p = cfg_read(PCI_CAP_PTR, 1); p; p = cfg_read(p + 1, 1)) {
		cr_assert_lt(n++, 16, "capability list loops");
		cr_assert_geq(p, 0x40);
		cr_assert_eq(p & 3, 0);
		uint32_t id = cfg_read(p, 1);
		if (id == PCI_CAP_ID_MSIX) {
			msix = true;
			uint32_t flags = cfg_read(p + 2, 2);
			cr_assert_eq(flags & PCI_MSIX_FLAGS_QSIZE, 2,
				     "3 vectors: 2 queues + config");
			cr_assert_eq(flags & PCI_MSIX_FLAGS_ENABLE, 0);
			cr_assert_eq(cfg_read(p + 4, 4), VIRTIO_PCI_MSIX_TABLE | 0,
				     "table in BAR 0");
			cr_assert_eq(cfg_read(p + 8, 4), VIRTIO_PCI_MSIX_PBA | 0, "PBA in BAR 0");
			continue;
		}
		cr_assert_eq(id, PCI_CAP_ID_VNDR);
		uint32_t type = cfg_read(p + 3, 1);
		cr_assert(type >= 1 && type <= 5, "cfg_type %u", type);
		cr_assert_eq(cfg_read(p + 2, 1), type == 2 || type == 5 ? 20u : 16u, "cap_len");
		if (type == 5) {
			want[5].seen = true;
			continue;
		}
		cr_assert_eq(cfg_read(p + 4, 1), 0, "BAR 0");
		cr_assert_eq(cfg_read(p + 8, 4), want[type].off);
		cr_assert_eq(cfg_read(p + 12, 4), want[type].len);
		if (type == 2)
			cr_assert_eq(cfg_read(p + 16, 4), 4, "notify_off_multiplier");
		want[type].seen = true;
	}
	for (int t = 1; t <= 5; t++)
		cr_assert(want[t].seen, "cfg_type %d present", t);
	cr_assert(msix);
}

/* ---- common configuration ---- */

Test(virtio_pci, status_sequence_and_reset)
{
	cr_assert_eq(status(), 0);
	cr_assert_eq(rd(COMMON(NUMQ), 2), 2);
	driver_ok();
	cr_assert_eq(activations, 1);
	cr_assert_eq(rd(COMMON(Q_ENABLE), 2), 1);
	wr(COMMON(MSIX), 2, 1);
	wr(COMMON(Q_SELECT), 2, 1);
	/* Reset: status, queue state and the transport's registers go back to their defaults. */
	wr(COMMON(STATUS), 1, 0);
	cr_assert_eq(status(), 0);
	cr_assert_eq(rd(COMMON(Q_SELECT), 2), 0);
	cr_assert_eq(rd(COMMON(MSIX), 2), VIRTIO_PCI_NO_VECTOR);
	cr_assert_eq(rd(COMMON(Q_ENABLE), 2), 0);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 256, "size back to the maximum");
	cr_assert_eq(rd(COMMON(Q_MSIX), 2), VIRTIO_PCI_NO_VECTOR);
	cr_assert_eq(rd(COMMON(Q_DESC), 8), 0);
}

Test(virtio_pci, feature_negotiation)
{
	wr(COMMON(STATUS), 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(COMMON(DFSELECT), 4, 0);
	cr_assert_eq(rd(COMMON(DF), 4), 1u << 3 | 1u << VIRTIO_RING_F_EVENT_IDX);
	wr(COMMON(DFSELECT), 4, 1);
	cr_assert_eq(rd(COMMON(DF), 4), 1u << (VIRTIO_F_VERSION_1 - 32));
	wr(COMMON(DFSELECT), 4, 2);
	cr_assert_eq(rd(COMMON(DF), 4), 0, "no features beyond bit 63");
	cr_assert_eq(rd(COMMON(DFSELECT), 4), 2);
	/* A feature never offered (bit 5): FEATURES_OK must not stick. */
	wr(COMMON(GFSELECT), 4, 0);
	wr(COMMON(GF), 4, 1u << 3 | 1u << 5);
	wr(COMMON(GFSELECT), 4, 1);
	wr(COMMON(GF), 4, 1);
	wr(COMMON(STATUS), 1, 0x0b);
	cr_assert_eq(status() & VIRTIO_STATUS_FEATURES_OK, 0);
	/* Without VERSION_1 neither. */
	wr(COMMON(GFSELECT), 4, 0);
	wr(COMMON(GF), 4, 1u << 3);
	wr(COMMON(GFSELECT), 4, 1);
	wr(COMMON(GF), 4, 0);
	wr(COMMON(STATUS), 1, 0x0b);
	cr_assert_eq(status() & VIRTIO_STATUS_FEATURES_OK, 0);
	/* A subset with VERSION_1: accepted, and the driver features read back. */
	wr(COMMON(GF), 4, 1);
	wr(COMMON(STATUS), 1, 0x0b);
	cr_assert_eq(status(), 0x0b);
	wr(COMMON(GFSELECT), 4, 0);
	cr_assert_eq(rd(COMMON(GF), 4), 1u << 3);
	/* Fixed after FEATURES_OK. */
	wr(COMMON(GF), 4, 1u << 3 | 1u << VIRTIO_RING_F_EVENT_IDX);
	cr_assert_eq(rd(COMMON(GF), 4), 1u << 3);
	/* DRIVER_OK without FEATURES_OK does not stick either (after a reset). */
	wr(COMMON(STATUS), 1, 0);
	wr(COMMON(STATUS), 1, 0x07);
	cr_assert_eq(status() & VIRTIO_STATUS_DRIVER_OK, 0);
}

Test(virtio_pci, queue_select_size_and_enable)
{
	negotiate();
	wr(COMMON(Q_SELECT), 2, 1);
	cr_assert_eq(rd(COMMON(Q_SELECT), 2), 1);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 256);
	cr_assert_eq(rd(COMMON(Q_NOFF), 2), 1, "notify offset = queue index");
	wr(COMMON(Q_SIZE), 2, 100);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 256, "not a power of two: ignored");
	wr(COMMON(Q_SIZE), 2, 512);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 256, "above the maximum: ignored");
	wr(COMMON(Q_SIZE), 2, 0);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 256);
	wr(COMMON(Q_SIZE), 2, 32);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 32);
	/* 64-bit addresses in halves or whole. */
	wr(COMMON(Q_DESC), 4, 0x12345000);
	wr(COMMON(Q_DESC) + 4, 4, 0x1);
	cr_assert_eq(rd(COMMON(Q_DESC), 8), 0x112345000ULL);
	cr_assert_eq(rd(COMMON(Q_DESC) + 4, 4), 1);
	wr(COMMON(Q_DRIVER), 8, 0x300000);
	cr_assert_eq(rd(COMMON(Q_DRIVER), 4), 0x300000);
	/* Partial writes of a register are ignored. */
	wr(COMMON(Q_SIZE), 1, 16);
	wr(COMMON(Q_DESC) + 2, 2, 0xffff);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 32);
	cr_assert_eq(rd(COMMON(Q_DESC), 8), 0x112345000ULL);
	/* Enable 0 means nothing; 1 enables, then the queue's registers are frozen. */
	wr(COMMON(Q_ENABLE), 2, 0);
	cr_assert_eq(rd(COMMON(Q_ENABLE), 2), 0);
	wr(COMMON(Q_ENABLE), 2, 1);
	cr_assert_eq(rd(COMMON(Q_ENABLE), 2), 1);
	wr(COMMON(Q_SIZE), 2, 64);
	wr(COMMON(Q_DESC), 8, 0x5000);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 32);
	cr_assert_eq(rd(COMMON(Q_DESC), 8), 0x112345000ULL);
	/* Queue 0 is untouched. */
	wr(COMMON(Q_SELECT), 2, 0);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 256);
	cr_assert_eq(rd(COMMON(Q_ENABLE), 2), 0);
	/* Out of range: size 0, writes go nowhere. */
	wr(COMMON(Q_SELECT), 2, 2);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 0);
	wr(COMMON(Q_SIZE), 2, 16);
	wr(COMMON(Q_ENABLE), 2, 1);
	wr(COMMON(Q_DESC), 8, 0x1000);
	wr(COMMON(Q_MSIX), 2, 0);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 0);
	cr_assert_eq(rd(COMMON(Q_ENABLE), 2), 0);
	cr_assert_eq(rd(COMMON(Q_MSIX), 2), VIRTIO_PCI_NO_VECTOR);
	wr(COMMON(Q_SELECT), 2, 0xffff);
	cr_assert_eq(rd(COMMON(Q_SIZE), 2), 0);
	/* Read-only registers. */
	wr(COMMON(NUMQ), 2, 9);
	wr(COMMON(CFGGEN), 1, 9);
	wr(COMMON(DF), 4, 0xffffffff);
	cr_assert_eq(rd(COMMON(NUMQ), 2), 2);
	cr_assert_eq(rd(COMMON(CFGGEN), 1), 0);
}

Test(virtio_pci, msix_vector_validation)
{
	wr(COMMON(MSIX), 2, 0);
	cr_assert_eq(rd(COMMON(MSIX), 2), 0);
	wr(COMMON(MSIX), 2, 2);
	cr_assert_eq(rd(COMMON(MSIX), 2), 2);
	wr(COMMON(MSIX), 2, 3);
	cr_assert_eq(rd(COMMON(MSIX), 2), VIRTIO_PCI_NO_VECTOR, "only 3 vectors");
	wr(COMMON(MSIX), 2, 0x8000);
	cr_assert_eq(rd(COMMON(MSIX), 2), VIRTIO_PCI_NO_VECTOR);
	wr(COMMON(Q_SELECT), 2, 1);
	wr(COMMON(Q_MSIX), 2, 1);
	cr_assert_eq(rd(COMMON(Q_MSIX), 2), 1);
	wr(COMMON(Q_MSIX), 2, 7);
	cr_assert_eq(rd(COMMON(Q_MSIX), 2), VIRTIO_PCI_NO_VECTOR);
	wr(COMMON(Q_MSIX), 2, VIRTIO_PCI_NO_VECTOR);
	cr_assert_eq(rd(COMMON(Q_MSIX), 2), VIRTIO_PCI_NO_VECTOR);
}

/* ---- interrupts ---- */

Test(virtio_pci, isr_read_to_clear_and_intx)
{
	int gsi = virtio_pci_intx_gsi(&vp);
	cr_assert_eq(gsi, pci_intx_gsi(slot, 1));
	cr_assert_eq(rd(VIRTIO_PCI_ISR_OFF, 1), 0);
	dev.transport->signal_queue(&dev, 0);
	cr_assert_eq(irq_level[gsi], 1, "INTx asserted");
	cr_assert_eq(rd(VIRTIO_PCI_ISR_OFF, 1), VIRTIO_PCI_ISR_QUEUE);
	cr_assert_eq(irq_level[gsi], 0, "deasserted by the read");
	cr_assert_eq(rd(VIRTIO_PCI_ISR_OFF, 1), 0, "read-to-clear");
	dev.transport->signal_config(&dev);
	dev.transport->signal_queue(&dev, 1);
	int changes = irq_changes;
	dev.transport->signal_queue(&dev, 1);
	cr_assert_eq(irq_changes, changes, "a level line is not re-asserted");
	cr_assert_eq(rd(VIRTIO_PCI_ISR_OFF, 1), VIRTIO_PCI_ISR_QUEUE | VIRTIO_PCI_ISR_CONFIG);
	cr_assert_eq(irq_level[gsi], 0);
	/* The command register's INTx disable holds the line low. */
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_INTX_DISABLE);
	dev.transport->signal_queue(&dev, 0);
	cr_assert_eq(irq_level[gsi], 0);
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY);
	cr_assert_eq(irq_level[gsi], 1, "pending ISR shows once INTx is allowed");
	cr_assert_eq(rd(VIRTIO_PCI_ISR_OFF, 1), VIRTIO_PCI_ISR_QUEUE);
	/* Writes to ISR are ignored. */
	dev.transport->signal_queue(&dev, 0);
	wr(VIRTIO_PCI_ISR_OFF, 1, 0);
	cr_assert_eq(rd(VIRTIO_PCI_ISR_OFF, 1), VIRTIO_PCI_ISR_QUEUE);
}

static uint8_t msix_cap(void)
{
	for (uint32_t p = cfg_read(PCI_CAP_PTR, 1); p; p = cfg_read(p + 1, 1))
		if (cfg_read(p, 1) == PCI_CAP_ID_MSIX)
			return (uint8_t)p;
	cr_assert_fail("no MSI-X capability");
	return 0;
}

static uint64_t drain(int fd)
{
	uint64_t n = 0;
	if (read(fd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return n;
}

/* KVM has a live route for gsi with this message (as of the last commit). */
static bool route_for(int gsi, uint32_t addr, uint32_t data)
{
	const struct fake_route *r = &committed[gsi - FIRST_MSI];
	return r->live && r->addr_lo == addr && r->addr_hi == 0 && r->data == data;
}

#define ENTRY(v, word) (VIRTIO_PCI_MSIX_TABLE + 16 * (v) + 4 * (word))

Test(virtio_pci, msix_delivery_masking_and_routes)
{
	cr_assert_eq(irqfds_bound, 3, "one irqfd per vector");
	uint8_t cap = msix_cap();
	/* The table starts masked. */
	for (int v = 0; v < 3; v++)
		cr_assert_eq(rd(ENTRY(v, 3), 4), 1);
	cr_assert_eq(rd(ENTRY(3, 0), 4), 0, "no entry 3");
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE);
	cr_assert(cfg_read(cap + 2, 2) & PCI_MSIX_FLAGS_ENABLE);
	wr(COMMON(Q_SELECT), 2, 0);
	wr(COMMON(Q_MSIX), 2, 1);
	wr(COMMON(MSIX), 2, 0);
	/* Program vector 1 while masked: no route yet. */
	wr(ENTRY(1, 0), 4, 0xfee00000);
	wr(ENTRY(1, 1), 4, 0);
	wr(ENTRY(1, 2), 4, 0x41);
	int gsi = vp.vec[1].gsi;
	cr_assert_geq(gsi, FIRST_MSI);
	cr_assert(!route_for(gsi, 0xfee00000, 0x41));
	/* A signal while masked: pending bit, nothing delivered. */
	dev.transport->signal_queue(&dev, 0);
	cr_assert_eq(drain(vp.vec[1].fd), 0);
	cr_assert_eq(rd(VIRTIO_PCI_MSIX_PBA, 8), 1u << 1);
	cr_assert_eq(rd(VIRTIO_PCI_ISR_OFF, 1), 0, "no ISR bit for queues under MSI-X");
	/* Unmask: the route goes to KVM and the pending interrupt is delivered. */
	wr(ENTRY(1, 3), 4, 0);
	cr_assert(route_for(gsi, 0xfee00000, 0x41));
	cr_assert_eq(drain(vp.vec[1].fd), 1);
	cr_assert_eq(rd(VIRTIO_PCI_MSIX_PBA, 8), 0);
	dev.transport->signal_queue(&dev, 0);
	cr_assert_eq(drain(vp.vec[1].fd), 1);
	/* The function mask holds everything back too. */
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	dev.transport->signal_queue(&dev, 0);
	cr_assert_eq(drain(vp.vec[1].fd), 0);
	cr_assert_eq(rd(VIRTIO_PCI_MSIX_PBA, 1), 2);
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE);
	cr_assert_eq(drain(vp.vec[1].fd), 1);
	/* Moving the message (qword write) updates the route. */
	wr(ENTRY(1, 0), 8, 0xfee01000);
	cr_assert_eq(rd(ENTRY(1, 0), 8), 0xfee01000);
	cr_assert(route_for(gsi, 0xfee01000, 0x41));
	/* Config changes go to vector 0 (masked: pending) and set ISR bit 1. */
	dev.transport->signal_config(&dev);
	cr_assert_eq(drain(vp.vec[0].fd), 0);
	cr_assert_eq(rd(VIRTIO_PCI_MSIX_PBA, 1), 1);
	cr_assert_eq(rd(VIRTIO_PCI_ISR_OFF, 1), VIRTIO_PCI_ISR_CONFIG);
	/* NO_VECTOR: nothing at all. */
	wr(COMMON(Q_MSIX), 2, VIRTIO_PCI_NO_VECTOR);
	dev.transport->signal_queue(&dev, 0);
	cr_assert_eq(drain(vp.vec[1].fd), 0);
	/* INTx stays quiet under MSI-X. */
	cr_assert_eq(irq_changes, 0);
	/* Odd table accesses are ignored. */
	wr(ENTRY(1, 0) + 1, 2, 0xffff);
	cr_assert_eq(rd(ENTRY(1, 0), 4), 0xfee01000);
	wr(ENTRY(1, 3), 4, 0xfffffffe);
	cr_assert_eq(rd(ENTRY(1, 3), 4), 0, "only the mask bit is writable");
}

/* KVM_SET_GSI_ROUTING rewrites KVM's whole routing table: once per config or table write that
 * changes a route, never per vector, never for a write that changes none. */
Test(virtio_pci, msix_routing_committed_once_per_change)
{
	uint8_t cap = msix_cap();
	/* Every vector programmed and unmasked while MSI-X is off: nothing to route yet. */
	for (int v = 0; v < 3; v++) {
		wr(ENTRY(v, 0), 4, 0xfee00000 + 0x1000 * (uint32_t)v);
		wr(ENTRY(v, 2), 4, 0x40 + (uint32_t)v);
		wr(ENTRY(v, 3), 4, 0);
	}
	cr_assert_eq(commits, 0);
	/* Enabling MSI-X brings up three routes in one commit. */
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE);
	cr_assert_eq(commits, 1, "%d commits for one config write", commits);
	for (int v = 0; v < 3; v++)
		cr_assert(route_for(vp.vec[v].gsi, 0xfee00000 + 0x1000 * (uint32_t)v,
				    0x40 + (uint32_t)v));
	/* Config writes that change no route commit nothing: the same flags again, the command
	 * register, the function mask set and cleared. */
	commits = 0;
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE);
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE);
	cr_assert_eq(commits, 0, "%d commits for writes that change no route", commits);
	/* Table writes: the same message again commits nothing; a new one while masked neither;
	 * unmasking it commits once, and a qword write of a new address once. */
	wr(ENTRY(1, 2), 4, 0x41);
	wr(ENTRY(1, 3), 4, 1);
	wr(ENTRY(1, 2), 4, 0x51);
	cr_assert_eq(commits, 0);
	cr_assert(route_for(vp.vec[1].gsi, 0xfee01000, 0x41), "masked: the old route stays");
	wr(ENTRY(1, 3), 4, 0);
	cr_assert_eq(commits, 1);
	cr_assert(route_for(vp.vec[1].gsi, 0xfee01000, 0x51));
	wr(ENTRY(1, 0), 8, 0xfee02000);
	cr_assert_eq(commits, 2);
	cr_assert(route_for(vp.vec[1].gsi, 0xfee02000, 0x51));
	/* A changed vector under the function mask reaches KVM when the mask drops, once. */
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	wr(ENTRY(0, 2), 4, 0x60);
	wr(ENTRY(2, 2), 4, 0x62);
	cr_assert_eq(commits, 2);
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE);
	cr_assert_eq(commits, 3);
	cr_assert(route_for(vp.vec[0].gsi, 0xfee00000, 0x60));
	cr_assert(route_for(vp.vec[2].gsi, 0xfee02000, 0x62));
	/* A commit KVM refused is tried again by the next write. */
	commit_fails = true;
	wr(ENTRY(0, 2), 4, 0x70);
	cr_assert_eq(commits, 4);
	commit_fails = false;
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	cr_assert_eq(commits, 5);
	cr_assert(route_for(vp.vec[0].gsi, 0xfee00000, 0x70));
}

static uint8_t cfg_cap(void)
{
	for (uint32_t p = cfg_read(PCI_CAP_PTR, 1); p; p = cfg_read(p + 1, 1))
		if (cfg_read(p, 1) == PCI_CAP_ID_VNDR && cfg_read(p + 3, 1) == 5)
			return (uint8_t)p;
	cr_assert_fail("no PCI configuration access capability");
	return 0;
}

Test(virtio_pci, pci_cfg_access_capability)
{
	uint8_t c = cfg_cap();
	/* Read num_queues through the window. */
	cfg_write(c + 4, 1, 0);
	cfg_write(c + 8, 4, VIRTIO_PCI_COMMON_OFF + VIRTIO_PCI_COMMON_NUMQ);
	cfg_write(c + 12, 4, 2);
	cr_assert_eq(cfg_read(c + 16, 2), 2);
	/* Write queue_select through it, read it back through the BAR. */
	cfg_write(c + 8, 4, VIRTIO_PCI_COMMON_OFF + VIRTIO_PCI_COMMON_Q_SELECT);
	cfg_write(c + 16, 2, 1);
	cr_assert_eq(rd(COMMON(Q_SELECT), 2), 1);
	/* Nonsense windows are ignored: bad length, misaligned, other BAR, beyond the BAR. */
	cfg_write(c + 12, 4, 3);
	cfg_write(c + 16, 4, 0);
	cr_assert_eq(rd(COMMON(Q_SELECT), 2), 1);
	cfg_write(c + 12, 4, 2);
	cfg_write(c + 8, 4, VIRTIO_PCI_COMMON_OFF + VIRTIO_PCI_COMMON_Q_SELECT + 1);
	cfg_write(c + 16, 2, 0);
	cfg_write(c + 4, 1, 2);
	cfg_write(c + 8, 4, VIRTIO_PCI_COMMON_OFF + VIRTIO_PCI_COMMON_Q_SELECT);
	cfg_write(c + 16, 2, 0);
	cfg_write(c + 4, 1, 0);
	cfg_write(c + 8, 4, 0xfffffffc);
	cfg_write(c + 12, 4, 4);
	cfg_write(c + 16, 4, 0);
	cr_assert_eq(rd(COMMON(Q_SELECT), 2), 1);
}

/* ---- device configuration and kicks ---- */

Test(virtio_pci, device_config_bounds)
{
	cr_assert_eq(rd(VIRTIO_PCI_DEVICE_OFF, 4), 0x04030201);
	cr_assert_eq(rd(VIRTIO_PCI_DEVICE_OFF + 4, 4), 0x08070605);
	cr_assert_eq(rd(VIRTIO_PCI_DEVICE_OFF + 7, 1), 8);
	int reads = config_reads;
	cr_assert_eq(rd(VIRTIO_PCI_DEVICE_OFF + 6, 4), 0, "straddles the end");
	cr_assert_eq(rd(VIRTIO_PCI_DEVICE_OFF + 8, 1), 0);
	cr_assert_eq(rd(VIRTIO_PCI_DEVICE_OFF + 0xffc, 4), 0);
	cr_assert_eq(config_reads, reads, "the device never sees an out-of-bounds access");
	wr(VIRTIO_PCI_DEVICE_OFF + 2, 2, 0xbbaa);
	cr_assert_eq(fake_cfg[2], 0xaa);
	wr(VIRTIO_PCI_DEVICE_OFF + 7, 2, 0xffff);
	wr(VIRTIO_PCI_DEVICE_OFF + 0x100, 4, 0xffffffff);
	cr_assert_eq(config_writes, 1);
	/* Unused parts of the BAR read as zero and ignore writes. */
	cr_assert_eq(rd(0x0800, 4), 0);
	wr(0x0800, 4, 1);
	cr_assert_eq(rd(VIRTIO_PCI_COMMON_OFF + 0x38, 4), 0);
}

Test(virtio_pci, trapped_kicks)
{
	wr(VIRTIO_PCI_NOTIFY_OFF + 4, 2, 1);
	cr_assert_eq(kicks[1], 0, "not live before DRIVER_OK");
	driver_ok();
	wr(VIRTIO_PCI_NOTIFY_OFF + 4, 2, 1);
	cr_assert_eq(kicks[1], 1);
	wr(VIRTIO_PCI_NOTIFY_OFF, 4, 0);
	cr_assert_eq(kicks[0], 1, "any width; the address names the queue");
	wr(VIRTIO_PCI_NOTIFY_OFF + 8, 2, 2);
	cr_assert_eq(kicks[0] + kicks[1] + kicks[2], 2, "no queue 2");
	cr_assert_eq(rd(VIRTIO_PCI_NOTIFY_OFF, 2), 0);
}

/* Bus Master Enable gates the device's access to guest memory: with it off, kicks are not
 * served (a device cannot DMA); turning it on serves what was made available meanwhile. */
Test(virtio_pci, bus_master_off_stops_queue_processing)
{
	driver_ok();
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY);
	wr(VIRTIO_PCI_NOTIFY_OFF + 4, 2, 1);
	cr_assert_eq(kicks[1], 0, "no bus mastering: the kick is not served");
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	wr(VIRTIO_PCI_NOTIFY_OFF + 4, 2, 1);
	cr_assert_eq(kicks[1], 1, "bus mastering back on: served again");
}

static int ioeventfds, ioeventfd_fd[4];
static uint64_t ioeventfd_addr[4];

static int host_ioeventfd(void *opaque, uint64_t addr, uint32_t len, bool datamatch, uint64_t value,
			  int fd, bool add)
{
	(void)opaque;
	/* Any write width, any value: the address names the queue. */
	cr_assert_eq(len, 0);
	cr_assert_not(datamatch);
	(void)value;
	if (add) {
		cr_assert_lt(ioeventfds, 4);
		ioeventfd_addr[ioeventfds] = addr;
		ioeventfd_fd[ioeventfds++] = fd;
	} else {
		ioeventfds--;
	}
	return 0;
}

Test(virtio_pci, kicks_through_eventfds_on_the_io_thread)
{
	teardown();
	static struct event_loop loop;
	cr_assert_eq(event_loop_init(&loop), 0);
	make(&fake_ops, &loop, host_ioeventfd);
	cr_assert_eq(ioeventfds, 0, "nothing before the BAR decodes");
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	cr_assert_eq(ioeventfds, 2);
	cr_assert_eq(ioeventfd_addr[0], BAR + VIRTIO_PCI_NOTIFY_OFF);
	cr_assert_eq(ioeventfd_addr[1], BAR + VIRTIO_PCI_NOTIFY_OFF + 4);
	driver_ok();
	/* What KVM does on a guest write: signal the eventfd. The I/O thread runs the kick. */
	uint64_t one = 1;
	cr_assert_eq(write(ioeventfd_fd[1], &one, 8), 8);
	event_loop_run_once(&loop, 1000);
	cr_assert_eq(kicks[1], 1);
	/* A trapped write takes the same path. */
	wr(VIRTIO_PCI_NOTIFY_OFF, 2, 0);
	cr_assert_eq(kicks[0], 0, "deferred to the I/O thread");
	event_loop_run_once(&loop, 1000);
	cr_assert_eq(kicks[0], 1);
	/* Moving the BAR moves the ioeventfds; turning decoding off removes them. */
	cfg_write(PCI_BAR0, 4, 0xc8000000);
	cr_assert_eq(ioeventfds, 2);
	cfg_write(PCI_COMMAND, 2, 0);
	cr_assert_eq(ioeventfds, 0);
	teardown();
	event_loop_destroy(&loop);
	make(&fake_ops, NULL, NULL);
}

/* A reset whose device-model work is still in flight (virtio-blk's requests) reads non-zero
 * until the device model is done: the driver waits for 0 (virtio 1.2, 4.1.4.3.2). */
Test(virtio_pci, pending_reset_reads_non_zero)
{
	driver_ok();
	wr(COMMON(STATUS), 1, 0);
	dev.reset_pending = true; /* as virtio-blk's reset leaves it with requests in flight */
	cr_assert_eq(status(), VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	virtio_dev_reset_done(&dev);
	cr_assert_eq(status(), 0);
}

/* ---- the hooks a vhost-user front end uses (dev->external_queues) ---- */

/* A queue's irqfd is its MSI-X vector's eventfd, and only while MSI-X is on and a vector is
 * assigned: otherwise (INTx, which needs ISR set with each interrupt, or no vector) -1, and
 * the front end relays the back end's interrupts through signal_queue. */
Test(virtio_pci, queue_irqfd_only_with_msix_and_a_vector)
{
	uint8_t cap = msix_cap();
	wr(COMMON(Q_SELECT), 2, 0);
	wr(COMMON(Q_MSIX), 2, 1);
	cr_assert_eq(rd(COMMON(Q_MSIX), 2), 1);
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 0), -1, "MSI-X off: INTx");
	cfg_write(cap + 2, 2, PCI_MSIX_FLAGS_ENABLE);
	cr_assert_geq(vp.vec[1].fd, 0);
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 0), vp.vec[1].fd);
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 1), -1, "queue 1 has no vector");
	wr(COMMON(Q_SELECT), 2, 1);
	wr(COMMON(Q_MSIX), 2, 2);
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 1), vp.vec[2].fd);
	wr(COMMON(Q_MSIX), 2, VIRTIO_PCI_NO_VECTOR);
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 1), -1, "vector taken away");
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 2), -1, "no queue 2");
	cr_assert_eq(dev.transport->queue_irqfd(&dev, -1), -1);
	cfg_write(cap + 2, 2, 0);
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 0), -1, "MSI-X turned off again");
}

/* A handed-over queue's ioeventfd is the back end's: its kicks no longer reach the I/O
 * thread, until they are taken back. */
Test(virtio_pci, kicks_handed_over_and_taken_back)
{
	teardown();
	static struct event_loop loop;
	cr_assert_eq(event_loop_init(&loop), 0);
	make(&fake_ops, &loop, host_ioeventfd);
	cfg_write(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	driver_ok();
	int kick = dev.transport->queue_kick_fd(&dev, 1, true);
	cr_assert_eq(kick, ioeventfd_fd[1], "not the eventfd KVM signals");
	cr_assert_eq(dev.transport->queue_kick_fd(&dev, 2, true), -1, "no queue 2");
	uint64_t one = 1;
	cr_assert_eq(write(kick, &one, 8), 8);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(kicks[1], 0, "a handed-over kick reached the I/O thread");
	cr_assert_eq(drain(kick), 1, "the back end's kick was taken");
	cr_assert_eq(dev.transport->queue_kick_fd(&dev, 1, false), kick);
	cr_assert_eq(write(kick, &one, 8), 8);
	event_loop_run_once(&loop, 1000);
	cr_assert_eq(kicks[1], 1, "taken back: kicks reach the I/O thread again");
	teardown();
	event_loop_destroy(&loop);
	make(&fake_ops, NULL, NULL);
}
