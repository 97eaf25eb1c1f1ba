/*
 * test=hostile: malformed descriptor chains on the first virtio-rng device, one kind per
 * reset. The device must flag DEVICE_NEEDS_RESET (and not hang, crash or touch memory it
 * should not); afterwards a second device, and the first one after a reset, still work.
 */
#include "printf.h"
#include "test_hostile.h"
#include "test_rng.h"
#include "x86.h"

#define HOSTILE_WAIT_MS	 3000
#define HOSTILE_POLL_MS	 1
#define HOSTILE_VERIFY	 (64u << 10)
#define PAST_RAM_ADDR	 0xfff00000000ull      /* 16 TiB: no VMM gives the probe that much */
#define OVERFLOW_ADDR	 0xffffffffffff0000ull /* + 0x20000 wraps past 2^64 */
#define OVERFLOW_LEN	 0x20000
#define HOSTILE_BUF_SIZE 64

enum hostile_case { CASE_LOOP, CASE_PAST_RAM, CASE_OVERFLOW, NCASES };

static const char *const case_names[NCASES] = {"loop", "past-ram", "overflow"};

static uint8_t scratch[4096] __attribute__((aligned(4096), section(".noinit")));

/* Write the malformed chain by hand at descriptor 0 and make it available. */
static void post_case(struct virtq *vq, enum hostile_case c)
{
	volatile struct virtq_desc *desc = vq->desc;
	const uint16_t w = VIRTQ_DESC_F_WRITE, nx = VIRTQ_DESC_F_NEXT;
	switch (c) {
	case CASE_LOOP:
		desc[0] = (struct virtq_desc){(uint64_t)scratch, HOSTILE_BUF_SIZE, w | nx, 1};
		desc[1] = (struct virtq_desc){(uint64_t)scratch + HOSTILE_BUF_SIZE,
					      HOSTILE_BUF_SIZE, w | nx, 0};
		break;
	case CASE_PAST_RAM:
		desc[0] = (struct virtq_desc){PAST_RAM_ADDR, 4096, w, 0};
		break;
	default:
		desc[0] = (struct virtq_desc){OVERFLOW_ADDR, OVERFLOW_LEN, w, 0};
		break;
	}
	virtq_publish(vq, 0);
	virtq_kick(vq, true);
}

/* Bounded wait for DEVICE_NEEDS_RESET; a completion of the bad chain is a failure. */
static const char *await_needs_reset(struct virtio_dev *d, bool *flagged)
{
	struct virtq *vq = &d->vq[0];
	uint64_t t0 = rdtsc(), last = t0, limit = virtio_ms_to_cycles(HOSTILE_WAIT_MS);
	uint64_t poll = virtio_ms_to_cycles(HOSTILE_POLL_MS);
	*flagged = false;
	if (virtio_status(d) & VIRTIO_STATUS_DEVICE_NEEDS_RESET) {
		*flagged = true;
		return 0;
	}
	for (;;) {
		if (vq->used->idx != vq->last_used)
			return "device completed a malformed chain";
		uint64_t now = rdtsc();
		if (now - last > poll) {
			last = now;
			if (virtio_status(d) & VIRTIO_STATUS_DEVICE_NEEDS_RESET) {
				*flagged = true;
				return 0;
			}
		}
		if (now - t0 > limit)
			return "device did not set DEVICE_NEEDS_RESET";
		cpu_relax();
	}
}

static const char *verify(unsigned idx, struct virtio_dev *d)
{
	struct rng_stats st;
	const char *err = rng_read_checked(d, HOSTILE_VERIFY, &st);
	if (err)
		return err;
	rng_report(idx, d, &st);
	return 0;
}

const char *test_hostile(void)
{
	unsigned count;
	struct virtio_dev **devs = rng_devices(&count);
	const char *err;
	if (count < 2)
		return "test=hostile needs two virtio-rng devices";
	struct virtio_dev *victim = devs[0], *bystander = devs[1];
	kprintf("probe: hostile victim=%s 0x%lx bystander=%s 0x%lx\n",
		virtio_transport_name(victim), victim->base, virtio_transport_name(bystander),
		bystander->base);
	if ((err = rng_init(bystander)))
		return err;
	for (unsigned c = 0; c < NCASES; c++) {
		if ((err = rng_init(victim)))
			return err;
		post_case(&victim->vq[0], (enum hostile_case)c);
		bool flagged;
		err = await_needs_reset(victim, &flagged);
		kprintf("probe: hostile case=%s needs_reset=%u\n", case_names[c], flagged);
		if (err)
			return err;
	}
	if ((err = hostile_driver(victim)))
		return err;
	/* The loop in rng_init() resets the victim before each case; once more for the check. */
	if ((err = rng_init(victim)))
		return err;
	if ((err = verify(1, bystander)) || (err = verify(0, victim)))
		return err;
	kprintf("probe: hostile ok\n");
	return 0;
}
