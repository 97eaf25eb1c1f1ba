/* libFuzzer target: virtio-blk request parsing and I/O against an in-memory image (a memfd,
 * opened through /proc/self/fd like any image path), driven by a fuzzed driver
 * (tests/fuzz/fuzz_vdev.h describes the operations). Requests are a 16-byte header (type,
 * sector), data and a status byte; discard and write-zeroes carry 16-byte segments; get-id a
 * 20-byte buffer. Each completed request must have its status byte set to OK, IOERR or
 * UNSUPP.
 * Input: u8 image size in sectors (0: 1 sector less 1 byte), u8 options (bit 0 read-only,
 * bit 1 worker threads instead of io_uring), u32 feature bits accepted, then operations. The
 * device operation waits (at most 100 ms) for the requests in flight to complete. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devices/virtio/blk.h"
#include "fuzz_vdev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct virtio_blk *blk;

/* Every completed request has its status byte, the last device-writable one, set. */
static void check_used(int q, const struct fv_chain *c, uint32_t len)
{
	(void)q;
	if (fv.wild || fv.wrapped)
		return;
	const uint8_t *status = guest_mem_ptr(&fv.mem, c->last_byte, 1);
	if (!c->writable || len < 1 || !status || *status > 2)
		abort();
}

static void fv_device_op(struct fv_input *in)
{
	(void)in;
	for (int i = 0; i < 10 && virtio_blk_inflight(blk); i++)
		event_loop_run_once(&fv.loop, 10);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int img_fd = -1;
	static char path[64];
	fv_global_init();
	if (img_fd < 0) {
		img_fd = memfd_create("fuzz-blk", MFD_CLOEXEC);
		if (img_fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", img_fd);
	}
	struct fv_input in = {data, size};
	uint8_t sectors = fv_u8(&in), opt = fv_u8(&in);
	/* A fresh image each time: zeroes, of the size asked for. */
	if (ftruncate(img_fd, 0) || ftruncate(img_fd, sectors ? sectors * 512 : 511))
		abort();
	struct virtio_blk_options o = {.readonly = opt & 1, .no_uring = opt & 2};
	snprintf(o.path, sizeof(o.path), "%s", path);
	snprintf(o.serial, sizeof(o.serial), "fuzz-serial-%u", opt >> 2);
	fv_begin();
	blk = virtio_blk_create(&fv.dev, &fv.mem, &fv.loop, "fuzz-blk", &o);
	if (!blk)
		abort();
	fv.check_used = check_used;
	fv_restart_features = fv_u32(&in);
	fv_driver_start(fv_restart_features);
	fv_run_ops(&in);
	if (virtio_blk_inflight(blk))
		abort(); /* the reset waited for everything */
	virtio_blk_destroy(blk);
	pthread_mutex_destroy(&fv.dev.lock);
	return 0;
}
