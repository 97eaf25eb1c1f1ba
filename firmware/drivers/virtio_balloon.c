/* The probe's virtio-balloon driver: negotiation, its own four queues, config access. */
#include "virtio_balloon.h"

#include "lib.h"
#include "x86.h"

#define PAGE		  4096
#define WAIT_MS		  3000
#define MMIO_CONFIG	  0x100 /* virtio-mmio device configuration */
#define MMIO_GENERATION	  0x0fc
#define PCI_CC_GENERATION 0x15 /* virtio_pci_common_cfg.config_generation */
#define CFG_NUM_PAGES	  0
#define CFG_ACTUAL	  4

static uint8_t rings[BALLOON_MAX_QUEUES][3 * PAGE]
    __attribute__((aligned(PAGE), section(".noinit")));
static uint32_t pfn_buf[256] __attribute__((aligned(64)));

static uint64_t cfg_base(struct balloon *b)
{
	return b->d->transport == VIRTIO_MMIO ? b->d->base + MMIO_CONFIG : b->d->devcfg;
}

static uint32_t generation(struct balloon *b)
{
	if (b->d->transport == VIRTIO_MMIO)
		return *(volatile uint32_t *)(b->d->base + MMIO_GENERATION);
	return *(volatile uint8_t *)(b->d->common + PCI_CC_GENERATION);
}

uint32_t balloon_target(struct balloon *b)
{
	uint32_t gen, v;
	do {
		gen = generation(b);
		v = *(volatile uint32_t *)(cfg_base(b) + CFG_NUM_PAGES);
	} while (gen != generation(b));
	return v;
}

void balloon_set_actual(struct balloon *b, uint32_t pages)
{
	*(volatile uint32_t *)(cfg_base(b) + CFG_ACTUAL) = pages;
}

/* A split ring in three zeroed pages, polled: the device is asked for no interrupts. */
static void ring_setup(struct balloon *b, unsigned q, unsigned size)
{
	struct virtq *vq = &b->vq[q];
	uint8_t *mem = rings[q];
	memset(mem, 0, sizeof(rings[q]));
	memset(vq, 0, sizeof(*vq));
	vq->dev = b->d;
	vq->index = (uint16_t)q;
	vq->size = (uint16_t)size;
	vq->desc = (volatile struct virtq_desc *)mem;
	vq->avail = (volatile struct virtq_avail *)(mem + PAGE);
	vq->used = (volatile struct virtq_used *)(mem + 2 * PAGE);
	for (unsigned i = 0; i < size; i++)
		vq->desc[i].next = (uint16_t)(i + 1);
	vq->num_free = (uint16_t)size;
	vq->avail->flags = VIRTQ_AVAIL_F_NO_INTERRUPT;
}

static const char *fail(struct balloon *b, const char *err)
{
	b->d->ops->set_status(b->d, VIRTIO_STATUS_FAILED);
	return err;
}

const char *balloon_init(struct balloon *b, struct virtio_dev *d, bool want_reporting)
{
	const char *err;
	memset(b, 0, sizeof(*b));
	b->d = d;
	if ((err = virtio_reset(d)))
		return err;
	d->ops->set_status(d, VIRTIO_STATUS_ACKNOWLEDGE);
	d->ops->set_status(d, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	b->offered = d->ops->get_features(d, 0) | (uint64_t)d->ops->get_features(d, 1) << 32;
	if (!(b->offered >> VIRTIO_F_VERSION_1 & 1))
		return fail(b, "virtio-balloon does not offer VERSION_1");
	if (!(b->offered >> VIRTIO_BALLOON_F_STATS_VQ & 1))
		return fail(b, "virtio-balloon does not offer STATS_VQ");
	uint64_t want = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_BALLOON_F_STATS_VQ |
			1ull << VIRTIO_BALLOON_F_DEFLATE_ON_OOM;
	if (want_reporting)
		want |= 1ull << VIRTIO_BALLOON_F_REPORTING;
	b->features = d->features = b->offered & want;
	d->ops->set_features(d, 0, (uint32_t)b->features);
	d->ops->set_features(d, 1, (uint32_t)(b->features >> 32));
	uint8_t s = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	d->ops->set_status(d, s);
	if (!(d->ops->get_status(d) & VIRTIO_STATUS_FEATURES_OK))
		return fail(b, "virtio-balloon rejected FEATURES_OK");
	b->nq = b->features >> VIRTIO_BALLOON_F_REPORTING & 1 ? 4 : 3;
	for (unsigned q = 0; q < b->nq; q++) {
		unsigned max = d->ops->queue_max(d, q);
		if (!max)
			return fail(b, "virtio-balloon queue not available");
		ring_setup(b, q, max < VIRTQ_MAX_SIZE ? max : VIRTQ_MAX_SIZE);
		if ((err = d->ops->queue_enable(d, &b->vq[q])))
			return fail(b, err);
	}
	d->ops->set_status(d, s | VIRTIO_STATUS_DRIVER_OK);
	if (d->ops->get_status(d) & VIRTIO_STATUS_DEVICE_NEEDS_RESET)
		return "virtio-balloon needs reset after DRIVER_OK";
	return 0;
}

const char *balloon_send_pfns(struct balloon *b, unsigned q, const uint32_t *pfns, unsigned n)
{
	struct virtq *vq = &b->vq[q];
	memcpy(pfn_buf, pfns, n * sizeof(uint32_t));
	struct virtq_buf vb = {(uint64_t)pfn_buf, n * (uint32_t)sizeof(uint32_t), false};
	if (virtq_add(vq, &vb, 1) < 0)
		return "virtio-balloon queue full";
	virtq_kick(vq, true);
	uint16_t id;
	uint32_t len;
	return virtq_wait(vq, &id, &len, WAIT_MS);
}

const char *balloon_deflate_on_oom(struct balloon *b, const uint32_t *pfns, unsigned n,
				   uint64_t *have)
{
	if (!balloon_may_deflate_on_oom(b))
		return "virtio-balloon: DEFLATE_ON_OOM not negotiated";
	if (n > *have)
		return "virtio-balloon: deflating more pages than the balloon holds";
	const char *err = balloon_send_pfns(b, BALLOON_Q_DEFLATE, pfns, n);
	if (err)
		return err;
	*have -= n;
	balloon_set_actual(b, (uint32_t)*have);
	return 0;
}
