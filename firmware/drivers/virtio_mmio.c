/*
 * virtio-mmio, version 2 only (virtio 1.2, 4.2.2). Devices come from the loader's device
 * tree (SETUP_DTB) when there is one, else from the kernel command line, in Linux's format:
 * virtio_mmio.device=<size>[KMG]@<baseaddr>:<irq>[:<id>].
 */
#include "boot_info.h"
#include "cmdline.h"
#include "fdt.h"
#include "ioapic.h"
#include "lib.h"
#include "printf.h"
#include "serial.h"
#include "smp.h"
#include "virtio.h"
#include "x86.h"

#define MMIO_MAGIC	    0x000
#define MMIO_VERSION	    0x004
#define MMIO_DEVICE_ID	    0x008
#define MMIO_DEV_FEATURES   0x010
#define MMIO_DEV_FEAT_SEL   0x014
#define MMIO_DRV_FEATURES   0x020
#define MMIO_DRV_FEAT_SEL   0x024
#define MMIO_QUEUE_SEL	    0x030
#define MMIO_QUEUE_NUM_MAX  0x034
#define MMIO_QUEUE_NUM	    0x038
#define MMIO_QUEUE_READY    0x044
#define MMIO_QUEUE_NOTIFY   0x050
#define MMIO_INT_STATUS	    0x060
#define MMIO_INT_ACK	    0x064
#define MMIO_STATUS	    0x070
#define MMIO_QUEUE_DESC_LO  0x080
#define MMIO_QUEUE_DESC_HI  0x084
#define MMIO_QUEUE_AVAIL_LO 0x090
#define MMIO_QUEUE_AVAIL_HI 0x094
#define MMIO_QUEUE_USED_LO  0x0a0
#define MMIO_QUEUE_USED_HI  0x0a4

#define MMIO_MAGIC_VALUE 0x74726976 /* "virt" */
#define MMIO_MIN_SIZE	 0x100
#define IDENTITY_TOP	 (4ull << 30)
#define MAX_ENTRIES	 VIRTIO_MAX_DEVS

static uint32_t rd(struct virtio_dev *d, unsigned reg)
{
	return mmio_read32(d->base + reg);
}

static void wr(struct virtio_dev *d, unsigned reg, uint32_t v)
{
	mmio_write32(d->base + reg, v);
}

static uint8_t get_status(struct virtio_dev *d)
{
	return (uint8_t)rd(d, MMIO_STATUS);
}

static void set_status(struct virtio_dev *d, uint8_t s)
{
	wr(d, MMIO_STATUS, s);
}

static uint32_t get_features(struct virtio_dev *d, unsigned word)
{
	wr(d, MMIO_DEV_FEAT_SEL, word);
	return rd(d, MMIO_DEV_FEATURES);
}

static void set_features(struct virtio_dev *d, unsigned word, uint32_t bits)
{
	wr(d, MMIO_DRV_FEAT_SEL, word);
	wr(d, MMIO_DRV_FEATURES, bits);
}

static unsigned queue_max(struct virtio_dev *d, unsigned q)
{
	wr(d, MMIO_QUEUE_SEL, q);
	if (rd(d, MMIO_QUEUE_READY))
		return 0;
	return rd(d, MMIO_QUEUE_NUM_MAX);
}

static void wr64(struct virtio_dev *d, unsigned reg, uint64_t v)
{
	wr(d, reg, (uint32_t)v);
	wr(d, reg + 4, (uint32_t)(v >> 32));
}

static const char *queue_enable(struct virtio_dev *d, struct virtq *vq)
{
	wr(d, MMIO_QUEUE_SEL, vq->index);
	wr(d, MMIO_QUEUE_NUM, vq->size);
	wr64(d, MMIO_QUEUE_DESC_LO, (uint64_t)vq->desc);
	wr64(d, MMIO_QUEUE_AVAIL_LO, (uint64_t)vq->avail);
	wr64(d, MMIO_QUEUE_USED_LO, (uint64_t)vq->used);
	wr(d, MMIO_QUEUE_READY, 1);
	vq->notify_addr = d->base + MMIO_QUEUE_NOTIFY;
	vq->notify_width = 4;
	return 0;
}

static void queue_size_write(struct virtio_dev *d, unsigned q, unsigned size)
{
	wr(d, MMIO_QUEUE_SEL, q);
	wr(d, MMIO_QUEUE_NUM, size);
}

/* The `:irq` of the command-line entry (or the first `interrupts` cell) is a GSI; ISA-style:
 * edge-triggered, active high. */
static const char *irq_setup(struct virtio_dev *d)
{
	if (!ioapic_route(d->irq, d->vec_cfg, (uint8_t)lapic_id(), false))
		return "virtio-mmio irq has no IOAPIC pin";
	return 0;
}

/* 4.2.3.4: read what happened, acknowledge exactly that (a level-triggered line, as under
 * QEMU, drops; an edge-triggered one, as in minivmm, needs it too for the next edge). */
static void irq_ack(struct virtio_dev *d)
{
	uint32_t st = rd(d, MMIO_INT_STATUS);
	if (st)
		wr(d, MMIO_INT_ACK, st);
}

static const struct virtio_ops mmio_ops = {
    .get_status = get_status,
    .set_status = set_status,
    .get_features = get_features,
    .set_features = set_features,
    .queue_max = queue_max,
    .queue_size_write = queue_size_write,
    .queue_enable = queue_enable,
    .irq_setup = irq_setup,
    .irq_ack = irq_ack,
};

/* Decimal, or hex after 0x. */
static bool parse_addr(const char *s, size_t len, uint64_t *out)
{
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		uint64_t v = 0;
		if (len - 2 > 16)
			return false;
		for (size_t i = 2; i < len; i++) {
			char c = s[i];
			unsigned dgt;
			if (c >= '0' && c <= '9')
				dgt = (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				dgt = (unsigned)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				dgt = (unsigned)(c - 'A' + 10);
			else
				return false;
			v = v << 4 | dgt;
		}
		*out = v;
		return true;
	}
	return parse_u64(s, len, false, out);
}

static size_t find(const char *s, size_t len, char c)
{
	size_t i = 0;
	while (i < len && s[i] != c)
		i++;
	return i;
}

struct mmio_entry {
	uint64_t base, size, irq;
};

/* <size>@<base>:<irq>[:<id>] */
static bool parse_entry(const char *s, size_t len, struct mmio_entry *e)
{
	size_t at = find(s, len, '@');
	if (at == len || !parse_u64(s, at, true, &e->size))
		return false;
	s += at + 1;
	len -= at + 1;
	size_t colon = find(s, len, ':');
	if (colon == len || !parse_addr(s, colon, &e->base))
		return false;
	s += colon + 1;
	len -= colon + 1;
	size_t colon2 = find(s, len, ':');
	uint64_t id;
	if (colon2 < len && !parse_u64(s + colon2 + 1, len - colon2 - 1, false, &id))
		return false;
	return parse_u64(s, colon2, false, &e->irq) && e->irq <= 0xffffffffu;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* Keep a usable entry, sorted by address; false once the table is full. */
static bool add_entry(struct mmio_entry *found, unsigned *n, const struct mmio_entry *e)
{
	if (e->size < MMIO_MIN_SIZE || e->base >= IDENTITY_TOP ||
	    e->size > IDENTITY_TOP - e->base || e->base & 3) {
		kprintf("probe: virtio-mmio 0x%lx size=%lu not usable (below 4 GiB only)\n",
			e->base, e->size);
		return true;
	}
	if (*n == MAX_ENTRIES)
		return false;
	/* Insertion sort by address. */
	unsigned i = (*n)++;
	for (; i > 0 && found[i - 1].base > e->base; i--)
		found[i] = found[i - 1];
	found[i] = *e;
	return true;
}

/* virtio_mmio.device= words, in Linux's format. */
static unsigned from_cmdline(struct mmio_entry *found)
{
	static const char key[] = "virtio_mmio.device=";
	const size_t klen = sizeof(key) - 1;
	unsigned n = 0;
	const char *s = boot_info.cmdline;
	while (s && *s) {
		while (is_space(*s))
			s++;
		const char *w = s;
		while (*s && !is_space(*s))
			s++;
		size_t len = (size_t)(s - w);
		if (len <= klen || memcmp(w, key, klen))
			continue;
		struct mmio_entry e;
		if (!parse_entry(w + klen, len - klen, &e)) {
			serial_write("probe: virtio-mmio bad entry ", 29);
			serial_write(w, len);
			serial_write("\n", 1);
			continue;
		}
		if (!add_entry(found, &n, &e))
			break;
	}
	return n;
}

/* The "virtio,mmio" nodes of the loader's device tree; -1 if the tree is unusable. */
static int from_dtb(struct mmio_entry *found)
{
	struct fdt_mmio_dev devs[MAX_ENTRIES];
	const char *err;
	int total = fdt_virtio_mmio(boot_info.dtb, boot_info.dtb_size, devs, MAX_ENTRIES, &err);
	if (total < 0) {
		kprintf("probe: dtb unusable (%s), using the command line\n", err);
		return -1;
	}
	kprintf("probe: virtio-mmio devices from dtb: %d\n", total);
	unsigned n = 0;
	for (int i = 0; i < total && i < MAX_ENTRIES; i++) {
		struct mmio_entry e = {devs[i].base, devs[i].size, devs[i].irq};
		if (!add_entry(found, &n, &e))
			break;
	}
	return (int)n;
}

void virtio_mmio_discover(void)
{
	struct mmio_entry found[MAX_ENTRIES];
	int got = -1;
	if (boot_info.setup_data_err)
		kprintf("probe: %s\n", boot_info.setup_data_err);
	if (boot_info.dtb)
		got = from_dtb(found);
	unsigned n = got >= 0 ? (unsigned)got : from_cmdline(found);
	for (unsigned i = 0; i < n; i++) {
		uint64_t base = found[i].base;
		uint32_t magic = mmio_read32(base + MMIO_MAGIC);
		uint32_t version = mmio_read32(base + MMIO_VERSION);
		uint32_t id = mmio_read32(base + MMIO_DEVICE_ID);
		if (magic != MMIO_MAGIC_VALUE || version != 2) {
			kprintf("probe: virtio-mmio 0x%lx magic=0x%x version=%u unsupported\n",
				base, magic, version);
			continue;
		}
		if (!id) /* a transport with no device behind it */
			continue;
		struct virtio_dev *d = virtio_add_dev();
		if (!d)
			return;
		d->transport = VIRTIO_MMIO;
		d->ops = &mmio_ops;
		d->device_id = id;
		d->base = base;
		d->size = found[i].size;
		d->irq = (uint32_t)found[i].irq;
	}
}
