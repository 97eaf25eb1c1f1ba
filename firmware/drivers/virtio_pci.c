/*
 * virtio-pci, modern interface (virtio 1.2, 4.1): bus 0, functions found through config
 * mechanism #1, structures found through the vendor capabilities. Interrupts only by MSI-X
 * and only with use_irq: table entry 0 for configuration changes, 1 + q for queue q (entry 0
 * when the table is that small); without use_irq every vector is VIRTIO_MSI_NO_VECTOR.
 */
#include "pci.h"
#include "printf.h"
#include "smp.h"
#include "virtio.h"

#define VIRTIO_PCI_VENDOR     0x1af4
#define VIRTIO_PCI_MODERN     0x1040 /* + device id */
#define VIRTIO_PCI_TRANS_BASE 0x1000 /* transitional: 0x1000..0x103f, id in subsystem id */
#define VIRTIO_MSI_NO_VECTOR  0xffff

/* virtio_pci_cap.cfg_type */
#define CAP_COMMON 1
#define CAP_NOTIFY 2
#define CAP_ISR	   3
#define CAP_DEVICE 4

/* struct virtio_pci_common_cfg */
#define CC_DEV_FEAT_SEL	    0x00
#define CC_DEV_FEAT	    0x04
#define CC_DRV_FEAT_SEL	    0x08
#define CC_DRV_FEAT	    0x0c
#define CC_MSIX_CONFIG	    0x10
#define CC_NUM_QUEUES	    0x12
#define CC_STATUS	    0x14
#define CC_QUEUE_SEL	    0x16
#define CC_QUEUE_SIZE	    0x18
#define CC_QUEUE_MSIX	    0x1a
#define CC_QUEUE_ENABLE	    0x1c
#define CC_QUEUE_NOTIFY_OFF 0x1e
#define CC_QUEUE_DESC	    0x20
#define CC_QUEUE_DRIVER	    0x28
#define CC_QUEUE_DEVICE	    0x30
#define CC_MIN_LEN	    0x38

/* MSI-X capability and table (PCI 3.0, 6.8.2) */
#define MSIX_CTRL	   2
#define MSIX_TABLE	   4
#define MSIX_CTRL_ENABLE   0x8000
#define MSIX_CTRL_MASKALL  0x4000
#define MSIX_ENTRY_SIZE	   16
#define MSIX_VEC_CTRL_MASK 1
#define MSI_ADDR_BASE	   0xfee00000u

static uint8_t r8(uint64_t a)
{
	return *(volatile uint8_t *)a;
}
static uint16_t r16(uint64_t a)
{
	return *(volatile uint16_t *)a;
}
static uint32_t r32(uint64_t a)
{
	return *(volatile uint32_t *)a;
}
static void w8(uint64_t a, uint8_t v)
{
	*(volatile uint8_t *)a = v;
}
static void w16(uint64_t a, uint16_t v)
{
	*(volatile uint16_t *)a = v;
}
static void w32(uint64_t a, uint32_t v)
{
	*(volatile uint32_t *)a = v;
}
static void w64(uint64_t a, uint64_t v)
{
	w32(a, (uint32_t)v);
	w32(a + 4, (uint32_t)(v >> 32));
}

static uint8_t get_status(struct virtio_dev *d)
{
	return r8(d->common + CC_STATUS);
}

static void set_status(struct virtio_dev *d, uint8_t s)
{
	w8(d->common + CC_STATUS, s);
}

static uint32_t get_features(struct virtio_dev *d, unsigned word)
{
	w32(d->common + CC_DEV_FEAT_SEL, word);
	return r32(d->common + CC_DEV_FEAT);
}

static void set_features(struct virtio_dev *d, unsigned word, uint32_t bits)
{
	w32(d->common + CC_DRV_FEAT_SEL, word);
	w32(d->common + CC_DRV_FEAT, bits);
}

static unsigned queue_max(struct virtio_dev *d, unsigned q)
{
	if (q >= r16(d->common + CC_NUM_QUEUES))
		return 0;
	w16(d->common + CC_QUEUE_SEL, (uint16_t)q);
	if (r16(d->common + CC_QUEUE_ENABLE))
		return 0;
	return r16(d->common + CC_QUEUE_SIZE);
}

/* The MSI-X table entry queue q uses. */
static uint16_t queue_entry(const struct virtio_dev *d, unsigned q)
{
	return (uint16_t)(1 + q < d->msix_size ? 1 + q : 0);
}

static void msix_entry(struct virtio_dev *d, unsigned entry, uint8_t vector)
{
	uint64_t e = d->msix_table + (uint64_t)entry * MSIX_ENTRY_SIZE;
	w32(e + 0, MSI_ADDR_BASE | lapic_id() << 12); /* fixed, physical destination */
	w32(e + 4, 0);
	w32(e + 8, vector); /* edge, fixed delivery */
	w32(e + 12, 0);	    /* unmasked */
}

/* Enable MSI-X with the function masked, fill the table, unmask; then name entry 0 for
 * configuration interrupts and check that the device took it. */
static const char *irq_setup(struct virtio_dev *d)
{
	if (!d->msix || !d->msix_table)
		return "virtio-pci device has no usable MSI-X table";
	unsigned b = d->bus, s = d->slot, f = d->func, cap = d->msix_cap;
	uint16_t ctl = pci_read16(b, s, f, cap + MSIX_CTRL);
	pci_write16(b, s, f, cap + MSIX_CTRL, ctl | MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	msix_entry(d, 0, d->vec_cfg);
	for (unsigned q = 0; q < VIRTIO_MAX_QUEUES; q++)
		if (queue_entry(d, q))
			msix_entry(d, queue_entry(d, q), d->vec_q[q]);
	ctl = (uint16_t)((ctl | MSIX_CTRL_ENABLE) & ~MSIX_CTRL_MASKALL);
	pci_write16(b, s, f, cap + MSIX_CTRL, ctl);
	if (!(pci_read16(b, s, f, cap + MSIX_CTRL) & MSIX_CTRL_ENABLE))
		return "virtio-pci MSI-X enable did not stick";
	w16(d->common + CC_MSIX_CONFIG, 0);
	if (r16(d->common + CC_MSIX_CONFIG) == VIRTIO_MSI_NO_VECTOR)
		return "virtio-pci device refused the msix_config vector";
	return 0;
}

static void queue_size_write(struct virtio_dev *d, unsigned q, unsigned size)
{
	w16(d->common + CC_QUEUE_SEL, (uint16_t)q);
	w16(d->common + CC_QUEUE_SIZE, (uint16_t)size);
}

static const char *queue_enable(struct virtio_dev *d, struct virtq *vq)
{
	uint64_t c = d->common;
	if (vq->index == 0 && !d->use_irq)
		w16(c + CC_MSIX_CONFIG, VIRTIO_MSI_NO_VECTOR);
	w16(c + CC_QUEUE_SEL, vq->index);
	w16(c + CC_QUEUE_SIZE, vq->size);
	uint16_t entry = d->use_irq ? queue_entry(d, vq->index) : VIRTIO_MSI_NO_VECTOR;
	w16(c + CC_QUEUE_MSIX, entry);
	if (d->use_irq && r16(c + CC_QUEUE_MSIX) != entry)
		return "virtio-pci device refused the queue's MSI-X vector";
	w64(c + CC_QUEUE_DESC, (uint64_t)vq->desc);
	w64(c + CC_QUEUE_DRIVER, (uint64_t)vq->avail);
	w64(c + CC_QUEUE_DEVICE, (uint64_t)vq->used);
	uint64_t off = (uint64_t)r16(c + CC_QUEUE_NOTIFY_OFF) * d->notify_mult;
	if (off + 2 > d->notify_len)
		return "virtio-pci notify address outside its capability";
	vq->notify_addr = d->notify + off;
	vq->notify_width = 2;
	w16(c + CC_QUEUE_ENABLE, 1);
	return 0;
}

static const struct virtio_ops pci_ops = {
    .get_status = get_status,
    .set_status = set_status,
    .get_features = get_features,
    .set_features = set_features,
    .queue_max = queue_max,
    .queue_size_write = queue_size_write,
    .queue_enable = queue_enable,
    .irq_setup = irq_setup,
};

struct cap {
	bool found;
	uint8_t bar;
	uint32_t offset, length, mult;
};

/* A structure a capability points at: BAR address + offset, checked against the BAR. */
static uint64_t cap_addr(unsigned b, unsigned s, unsigned f, const struct cap *c, uint64_t bars[6])
{
	if (!c->found)
		return 0;
	if (bars[c->bar] == 1) /* not looked at yet: map each BAR once */
		bars[c->bar] = pci_bar_map(b, s, f, c->bar);
	return bars[c->bar] ? bars[c->bar] + c->offset : 0;
}

static void probe_function(unsigned b, unsigned s, unsigned f, uint32_t id)
{
	uint16_t dev = (uint16_t)(id >> 16);
	uint32_t vid;
	if (dev >= VIRTIO_PCI_MODERN && dev <= VIRTIO_PCI_MODERN + 0x3f)
		vid = dev - VIRTIO_PCI_MODERN;
	else if (dev >= VIRTIO_PCI_TRANS_BASE && dev < VIRTIO_PCI_MODERN)
		vid = pci_read16(b, s, f, PCI_SUBSYSTEM_ID);
	else
		return;
	struct cap caps[CAP_DEVICE + 1] = {0};
	bool msix = false;
	unsigned msix_size = 0, msix_cap = 0;
	uint32_t msix_table = 0;
	if (pci_read16(b, s, f, PCI_STATUS) & PCI_STATUS_CAPS) {
		unsigned ptr = pci_read8(b, s, f, PCI_CAP_PTR) & 0xfc;
		for (unsigned guard = 0; ptr >= 0x40 && guard < 48; guard++) {
			uint32_t hdr = pci_read32(b, s, f, ptr);
			uint8_t cap_id = (uint8_t)hdr, type = (uint8_t)(hdr >> 24);
			if (cap_id == PCI_CAP_ID_MSIX) {
				msix = true;
				msix_size = (hdr >> 16 & 0x7ff) + 1;
				msix_cap = ptr;
				msix_table = pci_read32(b, s, f, ptr + MSIX_TABLE);
			} else if (cap_id == PCI_CAP_ID_VENDOR && type >= CAP_COMMON &&
				   type <= CAP_DEVICE && !caps[type].found) {
				struct cap *c = &caps[type];
				c->bar = pci_read8(b, s, f, ptr + 4);
				c->offset = pci_read32(b, s, f, ptr + 8);
				c->length = pci_read32(b, s, f, ptr + 12);
				if (type == CAP_NOTIFY)
					c->mult = pci_read32(b, s, f, ptr + 16);
				c->found = c->bar <= 5;
			}
			ptr = (hdr >> 8) & 0xfc;
		}
	}
	if (!caps[CAP_COMMON].found || !caps[CAP_NOTIFY].found ||
	    caps[CAP_COMMON].length < CC_MIN_LEN) {
		kprintf("probe: pci %02x:%02x.%x virtio id=%u: no modern interface, skipped\n", b,
			s, f, vid);
		return;
	}
	struct virtio_dev *d = virtio_add_dev();
	if (!d)
		return;
	d->transport = VIRTIO_PCI;
	d->ops = &pci_ops;
	d->device_id = vid;
	d->bus = (uint8_t)b;
	d->slot = (uint8_t)s;
	d->func = (uint8_t)f;
	d->msix = msix;
	d->msix_size = msix_size;
	uint64_t bars[6] = {1, 1, 1, 1, 1, 1};
	d->common = cap_addr(b, s, f, &caps[CAP_COMMON], bars);
	d->notify = cap_addr(b, s, f, &caps[CAP_NOTIFY], bars);
	d->notify_len = caps[CAP_NOTIFY].length;
	d->notify_mult = caps[CAP_NOTIFY].mult;
	d->isr = cap_addr(b, s, f, &caps[CAP_ISR], bars);
	d->devcfg = cap_addr(b, s, f, &caps[CAP_DEVICE], bars);
	d->base = d->common;
	if (msix) {
		struct cap t = {true, (uint8_t)(msix_table & 7), msix_table & ~7u, 0, 0};
		d->msix_cap = (uint8_t)msix_cap;
		d->msix_table = t.bar <= 5 ? cap_addr(b, s, f, &t, bars) : 0;
	}
	if (!d->common || !d->notify) {
		kprintf("probe: pci %02x:%02x.%x virtio id=%u: BAR unusable, skipped\n", b, s, f,
			vid);
		virtio_ndevs--;
		return;
	}
	/* msix_vectors=0: no MSI-X capability. */
	kprintf("probe: pci %02x:%02x.%x virtio id=%u common=0x%lx notify=0x%lx mult=%u "
		"msix_vectors=%u\n",
		b, s, f, vid, d->common, d->notify, d->notify_mult, msix ? msix_size : 0);
}

void virtio_pci_discover(void)
{
	for (unsigned s = 0; s < 32; s++) {
		uint32_t id = pci_read32(0, s, 0, PCI_VENDOR_ID);
		if ((id & 0xffff) == 0xffff)
			continue;
		bool multi = pci_read8(0, s, 0, PCI_HEADER_TYPE) & 0x80;
		for (unsigned f = 0; f < (multi ? 8u : 1u); f++) {
			if (f)
				id = pci_read32(0, s, f, PCI_VENDOR_ID);
			if ((id & 0xffff) == VIRTIO_PCI_VENDOR)
				probe_function(0, s, f, id);
		}
	}
}
