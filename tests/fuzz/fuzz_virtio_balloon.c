/* libFuzzer target: virtio-balloon inflate and deflate PFN arrays, statistics buffers and free
 * page reports, driven by a fuzzed driver (tests/fuzz/fuzz_vdev.h describes the operations;
 * queues: 0 inflate, 1 deflate, 2 stats, 3 reporting when offered). Inflated pages of the fake
 * guest RAM are really released (they read back as zeros), the rings included: used entries are
 * therefore not checked against the posted chains, only for memory safety.
 * Input: u8 options (bit 0 deflate-on-oom, bit 1 free page reporting), u64 feature bits
 * accepted, then operations. The device operation is u8 what: 0 a new target (u32 pages), 1 ask
 * for statistics, 2 read the counters (checked against guest RAM), 3 wait 1 ms for timers. */
#include "devices/virtio/balloon.h"
#include "fuzz_vdev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct virtio_balloon *balloon;

static void fv_device_op(struct fv_input *in)
{
	switch (fv_u8(in) % 4) {
	case 0: {
		char err[128] = "";
		uint32_t pages = fv_u32(in);
		if (virtio_balloon_set_target(balloon, pages, err, sizeof(err)) && !err[0])
			abort();
		break;
	}
	case 1:
		virtio_balloon_request_stats(balloon);
		break;
	case 2: {
		struct balloon_info info;
		virtio_balloon_get_info(balloon, &info);
		if (info.inflated_pages > FV_RAM_SIZE / BALLOON_PAGE_SIZE ||
		    info.target_pages > FV_RAM_SIZE / BALLOON_PAGE_SIZE ||
		    info.reported_bytes % BALLOON_PAGE_SIZE)
			abort();
		for (unsigned t = 0; t < BALLOON_NR_STATS; t++)
			if (!virtio_balloon_stat_name(t))
				abort();
		break;
	}
	case 3:
		event_loop_run_once(&fv.loop, 1);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fv_global_init();
	struct fv_input in = {data, size};
	uint8_t opt = fv_u8(&in);
	struct balloon_options o = {.deflate_on_oom = opt & 1, .reporting = opt & 2};
	fv_begin();
	balloon = virtio_balloon_create(&fv.dev, &fv.mem, &fv.loop, "fuzz-balloon", &o);
	if (!balloon)
		abort();
	fv_restart_features = fv_u64(&in);
	fv_driver_start(fv_restart_features);
	fv.wild = true; /* see above */
	fv_run_ops(&in);
	virtio_balloon_destroy(balloon);
	pthread_mutex_destroy(&fv.dev.lock);
	return 0;
}
