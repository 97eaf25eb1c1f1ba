/* libFuzzer target: the virtio-mmio register interface driven by arbitrary guest writes, with
 * a virtio-rng device behind it and guest memory whose contents come from the input too.
 * Input: u8 n, then n 12-byte operations {u16 offset, u8 len, u8 write, u32 value,
 * u32 queue-notify}, then bytes copied to the start of guest RAM (rings, descriptors). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtio/mmio.h"
#include "devices/virtio/rng.h"
#include "base/event_loop.h"
#include "base/log.h"

#define RAM_SIZE (1u << 20)
#define SEED_LEN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *ram;
	static struct event_loop loop;
	if (!ram) {
		ram = malloc(RAM_SIZE);
		log_set_quiet(true);
		if (event_loop_init(&loop))
			abort();
	}
	if (size < 1)
		return 0;
	size_t nops = data[0];
	data++;
	size--;
	if (nops * 12 > size)
		nops = size / 12;
	const uint8_t *ops = data;
	/* Rings and buffers the operations may point at live in the first pages of RAM. */
	memset(ram, 0, RAM_SIZE);
	size_t seed = size - nops * 12 < SEED_LEN ? size - nops * 12 : SEED_LEN;
	memcpy(ram, data + nops * 12, seed);
	data = ops;
	size = nops * 12;

	struct guest_mem mem;
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	struct virtio_dev dev;
	struct virtio_rng *rng = virtio_rng_create(&dev, &mem, &loop, "fuzz-rng");
	struct virtio_mmio t;
	virtio_mmio_init(&t, &dev, 0xd0000000, 5);

	for (; size >= 12; data += 12, size -= 12) {
		uint16_t offset;
		uint32_t value, notify;
		memcpy(&offset, data, 2);
		uint8_t len = (uint8_t)(1u << (data[2] & 3));
		bool is_write = data[3] & 1;
		memcpy(&value, data + 4, 4);
		memcpy(&notify, data + 8, 4);
		uint8_t buf[8] = {0};
		memcpy(buf, &value, 4);
		virtio_mmio_io(&t, offset & 0xfff, buf, len, is_write);
		if (notify & 1)
			virtio_dev_queue_notify(&dev, (int)((notify >> 1) & 3));
		/* Run bottom halves the device scheduled (a ring longer than one pass). */
		event_loop_run_once(&loop, 0);
	}
	virtio_dev_set_status(&dev, 0);
	virtio_rng_destroy(rng);
	pthread_mutex_destroy(&dev.lock);
	return 0;
}
