/*
 * test=hostile, second part: a driver that breaks the rules on purpose, and a VMM that must
 * neither crash nor spend unbounded time on it.
 *   status-clear  DRIVER_OK, then a status write without it: no bit may be cleared but by a
 *                 reset, so the bits stay and the device flags DEVICE_NEEDS_RESET.
 *   alias-rng     one chain of 256 writable descriptors over one 16 MiB range (~4 GiB
 *                 described): served promptly with at most 64 KiB written.
 *   alias-balloon the same chain as an inflate buffer: refused (NEEDS_RESET) promptly.
 *   queue-over-max QueueNum above QueueNumMax, with rings that fit it in RAM: refused
 *                 (NEEDS_RESET), not used with a size the device never offered.
 *   queue-race    an AP rewrites QueueNum with the maximum while the BSP enables a 1-entry
 *                 queue whose rings end at the last byte of RAM, and posts a request: each
 *                 round it completes or the device flags NEEDS_RESET; a VMM that let the size
 *                 change under a live queue writes past guest RAM and dies.
 */
#include "boot_info.h"
#include "cpu_tables.h"
#include "lib.h"
#include "printf.h"
#include "smp.h"
#include "test_hostile.h"
#include "tsc.h"
#include "virtio_balloon.h"
#include "x86.h"

#define PROMPT_MS     2000 /* the VMM must answer a hostile request within this */
#define ALIAS_DESCS   256
#define ALIAS_LEN     ((16u << 20) - 4096) /* 256 of them: just under the 4 GiB chain limit */
#define RNG_MAX_SERVE (64u << 10)
#define RACE_ROUNDS   400
#define RACE_BUF_LEN  64
#define AP_TIMEOUT    4000000000ull /* TSC cycles: 1 s at 4 GHz, more on slower clocks */

static uint8_t race_buf[RACE_BUF_LEN] __attribute__((aligned(64)));

/* Bounded wait: the used index moves (returns 1) or NEEDS_RESET shows (returns 0). */
static const char *await(struct virtio_dev *d, volatile struct virtq_used *used, uint16_t want,
			 bool *completed)
{
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(PROMPT_MS);
	for (;;) {
		if (used->idx == want) {
			*completed = true;
			return 0;
		}
		if (virtio_status(d) & VIRTIO_STATUS_DEVICE_NEEDS_RESET) {
			*completed = false;
			return 0;
		}
		if (rdtsc() - t0 > limit)
			return "the VMM did not answer a hostile request in time";
		cpu_relax();
	}
}

static const char *status_clear(struct virtio_dev *d)
{
	const char *err = virtio_init(d, 0, 1);
	if (err)
		return err;
	uint8_t before = virtio_status(d);
	d->ops->set_status(d, before & (uint8_t)~VIRTIO_STATUS_DRIVER_OK);
	uint8_t after = virtio_status(d);
	kprintf("probe: hostile case=status-clear status=0x%x needs_reset=%u\n", after,
		!!(after & VIRTIO_STATUS_DEVICE_NEEDS_RESET));
	if (!(after & VIRTIO_STATUS_DRIVER_OK))
		return "the device let the driver clear DRIVER_OK without a reset";
	if (!(after & VIRTIO_STATUS_DEVICE_NEEDS_RESET))
		return "clearing DRIVER_OK did not flag DEVICE_NEEDS_RESET";
	return 0;
}

/* ALIAS_DESCS descriptors chained from 0, each covering [at, at + ALIAS_LEN). */
static void post_alias(struct virtq *vq, uint64_t at, bool writable)
{
	for (unsigned i = 0; i < ALIAS_DESCS; i++)
		vq->desc[i] =
		    (struct virtq_desc){at, ALIAS_LEN,
					(uint16_t)((writable ? VIRTQ_DESC_F_WRITE : 0) |
						   (i + 1 < ALIAS_DESCS ? VIRTQ_DESC_F_NEXT : 0)),
					(uint16_t)(i + 1)};
	virtq_publish(vq, 0);
	virtq_kick(vq, true);
}

static const char *alias_rng(struct virtio_dev *d, uint64_t at)
{
	const char *err = virtio_init(d, 0, 1);
	if (err)
		return err;
	struct virtq *vq = &d->vq[0];
	if (vq->size < ALIAS_DESCS)
		return "rng queue too small for the aliasing chain";
	post_alias(vq, at, true);
	bool completed;
	if ((err = await(d, vq->used, (uint16_t)(vq->last_used + 1), &completed)))
		return err;
	uint32_t len = completed ? vq->used->ring[0].len : 0;
	kprintf("probe: hostile case=alias-rng described=%lu served=%u completed=%u\n",
		(uint64_t)ALIAS_DESCS * ALIAS_LEN, len, completed);
	if (!completed)
		return "an aliasing rng chain broke the device (it is valid, only large)";
	if (len == 0 || len > RNG_MAX_SERVE)
		return "an aliasing rng chain was served more than 64 KiB";
	return 0;
}

static const char *alias_balloon(uint64_t at)
{
	struct virtio_dev *d;
	if (!virtio_devices_of(VIRTIO_ID_BALLOON, &d, 1)) {
		kprintf("probe: hostile case=alias-balloon skipped (no balloon)\n");
		return 0;
	}
	static struct balloon b;
	const char *err = balloon_init(&b, d, false);
	if (err)
		return err;
	memset((void *)at, 0, ALIAS_LEN); /* PFN 0 over and over, should anything walk it */
	struct virtq *vq = &b.vq[BALLOON_Q_INFLATE];
	if (vq->size < ALIAS_DESCS)
		return "balloon queue too small for the aliasing chain";
	post_alias(vq, at, false);
	bool completed;
	if ((err = await(d, vq->used, (uint16_t)(vq->last_used + 1), &completed)))
		return err;
	kprintf("probe: hostile case=alias-balloon needs_reset=%u\n", !completed);
	if (completed)
		return "a 4 GiB inflate buffer was accepted";
	return virtio_reset(d);
}

/* Status up to FEATURES_OK with only VERSION_1, after a reset. */
static const char *features_ok(struct virtio_dev *d)
{
	const char *err = virtio_reset(d);
	if (err)
		return err;
	uint8_t s = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;
	d->ops->set_status(d, s);
	d->ops->set_features(d, 0, 0);
	d->ops->set_features(d, 1, 1u << (VIRTIO_F_VERSION_1 - 32));
	d->ops->set_status(d, s | VIRTIO_STATUS_FEATURES_OK);
	return 0;
}

static const char *queue_over_max(struct virtio_dev *d, uint64_t at)
{
	const char *err = features_ok(d);
	if (err)
		return err;
	unsigned max = d->ops->queue_max(d, 0), size = max * 4;
	if (size > 1024)
		return "queue-over-max: QueueNumMax above 256";
	struct virtq *vq = &d->vq[0];
	memset(vq, 0, sizeof(*vq));
	vq->dev = d;
	vq->size = (uint16_t)size;
	vq->desc = (volatile struct virtq_desc *)at;
	vq->avail = (volatile struct virtq_avail *)(at + 0x4000);
	vq->used = (volatile struct virtq_used *)(at + 0x5000);
	memset((void *)at, 0, 0x8000);
	if ((err = d->ops->queue_enable(d, vq)))
		return err;
	d->ops->set_status(d, virtio_status(d) | VIRTIO_STATUS_DRIVER_OK);
	uint8_t st = virtio_status(d);
	kprintf("probe: hostile case=queue-over-max size=%u max=%u needs_reset=%u\n", size, max,
		!!(st & VIRTIO_STATUS_DEVICE_NEEDS_RESET));
	if (!(st & VIRTIO_STATUS_DEVICE_NEEDS_RESET))
		return "a queue size above QueueNumMax was accepted";
	return virtio_reset(d);
}

/* ---- queue-race ---- */

static struct virtio_dev *volatile race_dev;
static volatile unsigned race_size; /* the queue's maximum, read while it was not live */
static volatile bool race_stop;
static volatile uint64_t race_writes;

static void race_writer(unsigned slot)
{
	(void)slot;
	struct virtio_dev *d = race_dev;
	while (!race_stop) {
		d->ops->queue_size_write(d, 0, race_size);
		race_writes++;
	}
}

static const char *race_round(struct virtio_dev *d, uint64_t top, bool *completed)
{
	const char *err = features_ok(d);
	if (err)
		return err;
	d->ops->set_status(d, virtio_status(d) | VIRTIO_STATUS_DRIVER_OK);
	/* Rings for one entry, ending at the last byte of RAM. */
	struct virtq *vq = &d->vq[0];
	memset(vq, 0, sizeof(*vq));
	vq->dev = d;
	vq->size = 1;
	vq->desc = (volatile struct virtq_desc *)(top - 64);
	vq->avail = (volatile struct virtq_avail *)(top - 48);
	vq->used = (volatile struct virtq_used *)(top - 16);
	memset((void *)(top - 64), 0, 64);
	if ((err = d->ops->queue_enable(d, vq)))
		return err;
	vq->desc[0] = (struct virtq_desc){(uint64_t)race_buf, RACE_BUF_LEN, VIRTQ_DESC_F_WRITE, 0};
	vq->avail->ring[0] = 0;
	barrier();
	vq->avail->idx = 1;
	virtq_kick(vq, true);
	return await(d, vq->used, 1, completed);
}

static const char *queue_race(struct virtio_dev *d, uint64_t top)
{
	struct cpu_list cpus;
	struct smp_result res;
	cpu_tables_find(boot_info.rsdp, &cpus);
	const char *err = virtio_reset(d);
	if (err)
		return err;
	race_size = d->ops->queue_max(d, 0);
	race_dev = d;
	race_stop = false;
	smp_set_ap_job(race_writer);
	uint64_t timeout = (uint64_t)tsc_khz() * 2000;
	smp_boot(&cpus, timeout > AP_TIMEOUT ? timeout : AP_TIMEOUT, &res);
	if (res.online < 2) {
		smp_set_ap_job(0);
		return "queue-race needs a second vCPU (--cpus 2)";
	}
	unsigned completed = 0, refused = 0;
	for (unsigned i = 0; i < RACE_ROUNDS && !err; i++) {
		bool done;
		if (!(err = race_round(d, top, &done)))
			done ? completed++ : refused++;
	}
	race_stop = true;
	smp_set_ap_job(0);
	kprintf("probe: hostile case=queue-race rounds=%u completed=%u needs_reset=%u "
		"racer_writes=%lu\n",
		RACE_ROUNDS, completed, refused, race_writes);
	if (err)
		return err;
	if (!race_writes)
		return "queue-race: the racing vCPU never wrote";
	return virtio_reset(d);
}

const char *hostile_driver(struct virtio_dev *victim)
{
	uint64_t top = boot_info_ram_top_below_4g();
	if (top < (64u << 20))
		return "test=hostile needs at least 64 MiB of RAM below 4 GiB";
	uint64_t alias = (top - (48u << 20)) & ~0xfffull;
	const char *err;
	if ((err = status_clear(victim)) || (err = alias_rng(victim, alias)) ||
	    (err = alias_balloon(alias)) || (err = queue_over_max(victim, alias)) ||
	    (err = queue_race(victim, top)))
		return err;
	return 0;
}
