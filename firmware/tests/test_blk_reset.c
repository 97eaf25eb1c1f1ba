/*
 * test=blk-reset: a reset of the first virtio-blk disk with large requests in flight (virtio
 * 1.2, 4.1.4.3: the driver writes status 0, then waits until it reads 0). RESET_REQS reads of
 * RESET_DESCS descriptors of blkreset.mib MiB each (default 64; the descriptors alias one range
 * of RAM); once the first has completed, the reset: the status write must return at once, with
 * the status reading non-zero while the other reads run. The probe prints "probe: blk-reset
 * pending=..." and waits for a byte on the serial port (the host checks the VMM's responsiveness
 * meanwhile), then reports whether the reset was still pending, waits for status 0, checks that no
 * request completed into the old ring after the reset, and sets the disk up again: a write and a
 * read back work.
 */
#include "test_blk_reset.h"

#include "boot_info.h"
#include "cmdline.h"
#include "lib.h"
#include "printf.h"
#include "serial.h"
#include "virtio_blk.h"
#include "x86.h"

#define RESET_REQS    32
#define RESET_DESCS   6 /* data descriptors per request: 32 x (6 + 2) fill a 256-entry ring */
#define DEFAULT_MIB   64
#define RESET_WAIT_MS 120000
#define FIRST_WAIT_MS 30000
#define POLL_MS	      1
#define CHECK_SECTOR  8
#define MIB	      (1ull << 20)

extern char _end[];

static struct {
	uint32_t type, reserved;
	uint64_t sector;
} hdrs[RESET_REQS] __attribute__((aligned(64)));
static volatile uint8_t statuses[RESET_REQS];
static uint8_t check_buf[2][4096] __attribute__((aligned(4096)));

static uint64_t elapsed_us(uint64_t t0)
{
	return (rdtsc() - t0) / (virtio_ms_to_cycles(1) / 1000 + 1);
}

/* Post the big reads; returns how many went in. */
static unsigned post_reads(struct virtio_dev *d, uint64_t alias, uint32_t len)
{
	unsigned n = 0;
	for (; n < RESET_REQS; n++) {
		hdrs[n].type = VBLK_T_IN;
		hdrs[n].sector = 0;
		statuses[n] = 0xee;
		struct virtq_buf bufs[RESET_DESCS + 2] = {{(uint64_t)&hdrs[n], 16, false}};
		for (unsigned k = 0; k < RESET_DESCS; k++)
			bufs[1 + k] = (struct virtq_buf){alias, len, true};
		bufs[RESET_DESCS + 1] = (struct virtq_buf){(uint64_t)&statuses[n], 1, true};
		if (virtq_add(&d->vq[0], bufs, RESET_DESCS + 2) < 0)
			break;
	}
	virtq_kick(&d->vq[0], true);
	return n;
}

/* Wait (bounded) for the status register to read 0, as a driver must after writing 0. */
static const char *await_reset(struct virtio_dev *d, uint64_t *us)
{
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(RESET_WAIT_MS);
	uint64_t poll = virtio_ms_to_cycles(POLL_MS), last = t0;
	while (virtio_status(d) != 0) {
		while (rdtsc() - last < poll)
			cpu_relax();
		last = rdtsc();
		if (last - t0 > limit)
			return "blk-reset: the reset did not complete";
	}
	*us = elapsed_us(t0);
	return 0;
}

/* The disk works after the reset: a write and a read back. */
static const char *reinit_and_check(struct virtio_dev *d)
{
	static struct vblk b;
	const char *err;
	uint8_t status;
	if ((err = vblk_open(&b, d)))
		return err;
	for (unsigned i = 0; i < sizeof(check_buf[0]); i++) {
		check_buf[0][i] = (uint8_t)(i * 13 + 1);
		check_buf[1][i] = 0xa5;
	}
	if ((err = vblk_sync(&b, VBLK_T_OUT, CHECK_SECTOR, check_buf[0], sizeof(check_buf[0]),
			     false, &status)))
		return err;
	if (status != VBLK_S_OK)
		return "blk-reset: a write after the reset failed";
	if ((err = vblk_sync(&b, VBLK_T_IN, CHECK_SECTOR, check_buf[1], sizeof(check_buf[1]), true,
			     &status)))
		return err;
	if (status != VBLK_S_OK || memcmp(check_buf[0], check_buf[1], sizeof(check_buf[0])))
		return "blk-reset: a read after the reset did not return what was written";
	return 0;
}

const char *test_blk_reset(void)
{
	unsigned count;
	struct virtio_dev **devs = vblk_devices(&count);
	if (!count)
		return "no virtio-blk device";
	struct virtio_dev *d = devs[0];
	const char *v;
	size_t vn;
	uint64_t mib = DEFAULT_MIB;
	if (cmdline_get(boot_info.cmdline, "blkreset.mib", &v, &vn) &&
	    (!parse_u64(v, vn, false, &mib) || mib == 0 || mib > 1024))
		return "bad blkreset.mib";
	uint64_t len = mib * MIB, top = boot_info_ram_top_below_4g();
	uint64_t alias = (top - len - 16 * MIB) & ~0xfffull;
	if (top < len + 16 * MIB || alias < (uint64_t)_end)
		return "blk-reset: not enough RAM above the probe for blkreset.mib";
	static struct vblk b;
	const char *err;
	if ((err = vblk_open(&b, d)))
		return err;
	if (b.capacity * 512 < RESET_DESCS * len)
		return "blk-reset: the disk is smaller than one request";
	uint16_t used_before = d->vq[0].used->idx;
	unsigned posted = post_reads(d, alias, (uint32_t)len);
	/* The device pops every request of a kick before it starts any: once one has completed,
	 * the rest are in flight (not still on the ring, where a reset would just forget them). */
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(FIRST_WAIT_MS);
	while (d->vq[0].used->idx == used_before) {
		if (rdtsc() - t0 > limit)
			return "blk-reset: no read completed";
		cpu_relax();
	}
	t0 = rdtsc();
	d->ops->set_status(d, 0);
	uint64_t write_us = elapsed_us(t0);
	uint16_t used_at_reset = d->vq[0].used->idx;
	uint8_t status = virtio_status(d);
	kprintf("probe: blk-reset transport=%s requests=%u bytes_each=%lu reset_write_us=%lu "
		"completed_before=%u pending=%u\n",
		virtio_transport_name(d), posted, RESET_DESCS * len, write_us,
		(unsigned)(uint16_t)(used_at_reset - used_before), status != 0);
	serial_getc(); /* the host looks at the VMM now */
	bool still = virtio_status(d) != 0;
	uint64_t wait_us;
	if ((err = await_reset(d, &wait_us)))
		return err;
	uint16_t used_after = d->vq[0].used->idx;
	kprintf("probe: blk-reset still_pending=%u reset_wait_us=%lu used_after_reset=%u\n", still,
		wait_us, (unsigned)(uint16_t)(used_after - used_at_reset));
	if (used_after != used_at_reset)
		return "blk-reset: requests completed into the ring after the reset";
	/* Only the requests finished before the reset may have written their status byte. */
	unsigned written = 0;
	for (unsigned i = 0; i < posted; i++)
		written += statuses[i] != 0xee;
	if (written != (uint16_t)(used_at_reset - used_before))
		return "blk-reset: a request wrote its status byte after the reset";
	if ((err = reinit_and_check(d)))
		return err;
	kprintf("probe: blk-reset ok\n");
	return 0;
}
