/* libFuzzer target: a hostile driver's rings against the device side of a split virtqueue.
 *
 * Input: a 32-byte header, then guest RAM (the rest of the input, exactly sized so ASan sees
 * any access past it).
 *   0..1  queue size (u16 LE), used as-is if flags bit 2, else 1 << (size % 11)
 *   2     flags: bit 0 INDIRECT_DESC, bit 1 EVENT_IDX, bit 2 raw size
 *   3     unused
 *   4..15 desc, avail, used guest-physical addresses (u32 LE each)
 *   16..31 operations, one per byte (low 3 bits: what, high 5 bits: argument)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtio/virtqueue.h"
#include "base/byteorder.h"
#include "base/guest_mem.h"

#define HDR_SIZE 32
#define NR_OPS	 16

/* Everything a successful pop hands out must lie inside guest RAM and add up. */
static void check_iovecs(const struct iovec *iov, unsigned n, size_t total, const uint8_t *ram,
			 size_t ram_size)
{
	size_t sum = 0;
	if (n > VIRTQ_MAX_SIZE)
		abort();
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *b = iov[i].iov_base;
		if (iov[i].iov_len == 0 || b < ram || iov[i].iov_len > ram_size ||
		    (size_t)(b - ram) > ram_size - iov[i].iov_len)
			abort();
		sum += iov[i].iov_len;
	}
	if (sum != total || total > UINT32_MAX)
		abort();
}

/* Consume the chain as a device would: read the request, fill the response. */
static uint32_t use_elem(const struct virtq_elem *e, const uint8_t *ram, size_t ram_size)
{
	check_iovecs(e->out, e->out_num, e->out_len, ram, ram_size);
	check_iovecs(e->in, e->in_num, e->in_len, ram, ram_size);
	volatile uint8_t sink = 0;
	for (unsigned i = 0; i < e->out_num; i++)
		sink ^= ((const uint8_t *)e->out[i].iov_base)[e->out[i].iov_len - 1];
	for (unsigned i = 0; i < e->in_num; i++)
		((uint8_t *)e->in[i].iov_base)[e->in[i].iov_len - 1] = sink;
	return (uint32_t)e->in_len;
}

static int pop_and_push(struct virtqueue *vq, struct virtq_elem *e, const uint8_t *ram,
			size_t ram_size)
{
	char err[256] = "";
	int rc = virtqueue_pop(vq, e, err, sizeof(err));
	if (rc == 1)
		virtqueue_push(vq, e->head, use_elem(e, ram, ram_size));
	else if (rc < 0 && err[0] == 0)
		abort(); /* every refusal must say why */
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR_SIZE + 1)
		return 0;
	size_t ram_size = size - HDR_SIZE;
	uint8_t *ram = malloc(ram_size);
	struct virtq_elem *e = malloc(sizeof(*e));
	if (!ram || !e)
		abort();
	memcpy(ram, data + HDR_SIZE, ram_size);
	struct guest_mem mem;
	guest_mem_init_with(&mem, ram, ram_size);

	uint16_t qsize = (uint16_t)(data[0] | data[1] << 8);
	uint8_t flags = data[2];
	struct virtqueue vq = {
	    .size = (flags & 4) ? qsize : (uint16_t)(1u << (qsize % 11)),
	    .desc_gpa = get_le32(data + 4),
	    .avail_gpa = get_le32(data + 8),
	    .used_gpa = get_le32(data + 12),
	    .indirect = flags & 1,
	    .event_idx = flags & 2,
	};
	char err[256];
	if (virtqueue_enable(&vq, &mem, err, sizeof(err)) < 0)
		goto out;
	vq.ready = true;

	for (int i = 0; i < NR_OPS; i++) {
		uint8_t op = data[16 + i], arg = op >> 3;
		switch (op & 7) {
		case 0: /* drain: the ring cannot hold more than size + 1 pops' worth */
			for (unsigned n = 0;
			     n <= vq.size && pop_and_push(&vq, e, ram, ram_size) == 1; n++)
				;
			(void)virtqueue_should_notify(&vq);
			break;
		case 1:
			pop_and_push(&vq, e, ram, ram_size);
			break;
		case 2:
			if (virtqueue_pop(&vq, e, err, sizeof(err)) == 1) {
				use_elem(e, ram, ram_size);
				virtqueue_unpop(&vq);
			}
			break;
		case 3:
			(void)virtqueue_set_notification(&vq, arg & 1);
			break;
		case 4:
			(void)virtqueue_should_notify(&vq);
			(void)virtqueue_has_work(&vq);
			break;
		case 5: /* the guest publishes more entries behind the device's back */
			if (vq.avail)
				vq.avail[1] = (uint16_t)(vq.avail[1] + arg);
			break;
		case 6: /* the guest rewrites a descriptor's next field between pops */
			if (vq.desc)
				((volatile uint16_t *)vq.desc)[8 * (arg % vq.size) + 7] ^=
				    (uint16_t)(arg * 0x0101);
			break;
		case 7:
			virtqueue_reset(&vq);
			vq.desc_gpa = get_le32(data + 4);
			vq.avail_gpa = get_le32(data + 8);
			vq.used_gpa = get_le32(data + 12);
			if (virtqueue_enable(&vq, &mem, err, sizeof(err)) < 0)
				goto out;
			break;
		}
	}
out:
	free(e);
	free(ram);
	return 0;
}
