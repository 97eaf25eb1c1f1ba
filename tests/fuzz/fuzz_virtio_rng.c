/* libFuzzer target: virtio-rng request handling driven by a fuzzed driver (tests/fuzz/fuzz_vdev.h
 * describes the operations). Input: u32 feature bits the driver accepts, then operations. Every
 * buffer the device fills must be device-writable and every used length within it. */
#include "devices/virtio/rng.h"
#include "fuzz_vdev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fv_device_op(struct fv_input *in)
{
	(void)in; /* nothing beyond requests: the device has no controls of its own */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fv_global_init();
	struct fv_input in = {data, size};
	fv_begin();
	struct virtio_rng *rng = virtio_rng_create(&fv.dev, &fv.mem, &fv.loop, "fuzz-rng");
	if (!rng)
		abort();
	fv_restart_features = fv_u32(&in);
	fv_driver_start(fv_restart_features);
	fv_run_ops(&in);
	virtio_rng_destroy(rng);
	pthread_mutex_destroy(&fv.dev.lock);
	return 0;
}
