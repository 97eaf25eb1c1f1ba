/* Split virtqueue device side against a fake guest: well-formed chains, every malformed one a
 * hostile driver can build, and the notification-suppression arithmetic at index wrap. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "devices/virtio/virtqueue.h"
#include "base/guest_mem.h"

#define RAM_SIZE  (1u << 20)
#define DESC_GPA  0x1000u
#define AVAIL_GPA 0x5000u
#define USED_GPA  0x6000u
#define IND_GPA	  0x10000u
#define BUF_GPA	  0x40000u

/* The driver side: a guest RAM buffer, a queue over it, and helpers that write rings. */
struct drv {
	uint8_t *ram;
	struct guest_mem mem;
	struct virtqueue vq;
	struct virtq_elem *elem;
	uint16_t avail_idx;
	char err[256];
};

static struct drv *drv_new(uint16_t size, bool indirect, bool event_idx)
{
	struct drv *d = calloc(1, sizeof(*d));
	cr_assert_not_null(d);
	d->ram = calloc(1, RAM_SIZE);
	d->elem = malloc(sizeof(*d->elem));
	cr_assert(d->ram && d->elem);
	guest_mem_init_with(&d->mem, d->ram, RAM_SIZE);
	d->vq.size = size;
	d->vq.desc_gpa = DESC_GPA;
	d->vq.avail_gpa = AVAIL_GPA;
	d->vq.used_gpa = USED_GPA;
	d->vq.indirect = indirect;
	d->vq.event_idx = event_idx;
	return d;
}

static struct drv *drv_enabled(uint16_t size, bool indirect, bool event_idx)
{
	struct drv *d = drv_new(size, indirect, event_idx);
	int rc = virtqueue_enable(&d->vq, &d->mem, d->err, sizeof(d->err));
	cr_assert_eq(rc, 0, "enable: %s", d->err);
	return d;
}

static void drv_free(struct drv *d)
{
	free(d->elem);
	free(d->ram);
	free(d);
}

static void put16(struct drv *d, uint64_t gpa, uint16_t v)
{
	memcpy(d->ram + gpa, &v, 2);
}

static uint16_t get16(struct drv *d, uint64_t gpa)
{
	uint16_t v;
	memcpy(&v, d->ram + gpa, 2);
	return v;
}

static uint32_t get32(struct drv *d, uint64_t gpa)
{
	uint32_t v;
	memcpy(&v, d->ram + gpa, 4);
	return v;
}

static void put_desc_at(struct drv *d, uint64_t table, uint16_t i, uint64_t addr, uint32_t len,
			uint16_t flags, uint16_t next)
{
	struct virtq_desc v = {.addr = addr, .len = len, .flags = flags, .next = next};
	memcpy(d->ram + table + 16 * (uint64_t)i, &v, sizeof(v));
}

static void put_desc(struct drv *d, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	put_desc_at(d, DESC_GPA, i, addr, len, flags, next);
}

/* Publish head in the next avail slot and bump avail->idx. */
static void publish(struct drv *d, uint16_t head)
{
	put16(d, AVAIL_GPA + 4 + 2 * (d->avail_idx % d->vq.size), head);
	d->avail_idx++;
	put16(d, AVAIL_GPA + 2, d->avail_idx);
}

static uint16_t used_idx(struct drv *d)
{
	return get16(d, USED_GPA + 2);
}

static void set_used_event(struct drv *d, uint16_t v)
{
	put16(d, AVAIL_GPA + 4 + 2 * d->vq.size, v);
}

static uint16_t avail_event(struct drv *d)
{
	return get16(d, USED_GPA + 4 + 8 * d->vq.size);
}

static int pop(struct drv *d)
{
	d->err[0] = 0;
	return virtqueue_pop(&d->vq, d->elem, d->err, sizeof(d->err));
}

/* Pop must refuse with a message containing want, and consume nothing. */
static void expect_pop_error(struct drv *d, const char *want)
{
	uint16_t before = d->vq.last_avail_idx;
	cr_assert_eq(pop(d), -1, "pop should fail with '%s'", want);
	cr_assert(strstr(d->err, want), "error '%s' lacks '%s'", d->err, want);
	cr_assert_eq(d->vq.last_avail_idx, before);
}

static void expect_enable_error(struct drv *d, const char *want)
{
	cr_assert_eq(virtqueue_enable(&d->vq, &d->mem, d->err, sizeof(d->err)), -1);
	cr_assert(strstr(d->err, want), "error '%s' lacks '%s'", d->err, want);
	cr_assert_null(d->vq.desc);
	cr_assert_null(d->vq.avail);
	cr_assert_null(d->vq.used);
}

Test(virtqueue, simple_chain_out_then_in)
{
	struct drv *d = drv_enabled(8, false, false);
	put_desc(d, 3, BUF_GPA, 100, VIRTQ_DESC_F_NEXT, 5);
	put_desc(d, 5, BUF_GPA + 0x1000, 200, VIRTQ_DESC_F_NEXT, 1);
	put_desc(d, 1, BUF_GPA + 0x2000, 300, VIRTQ_DESC_F_WRITE, 0);
	publish(d, 3);
	cr_assert(virtqueue_has_work(&d->vq));

	cr_assert_eq(pop(d), 1, "%s", d->err);
	struct virtq_elem *e = d->elem;
	cr_assert_eq(e->head, 3);
	cr_assert_eq(e->out_num, 2);
	cr_assert_eq(e->in_num, 1);
	cr_assert_eq(e->out_len, 300);
	cr_assert_eq(e->in_len, 300);
	cr_assert_eq(e->out[0].iov_base, d->ram + BUF_GPA);
	cr_assert_eq(e->out[0].iov_len, 100);
	cr_assert_eq(e->out[1].iov_base, d->ram + BUF_GPA + 0x1000);
	cr_assert_eq(e->out[1].iov_len, 200);
	cr_assert_eq(e->in[0].iov_base, d->ram + BUF_GPA + 0x2000);
	cr_assert_eq(e->in[0].iov_len, 300);
	cr_assert_eq(d->vq.last_avail_idx, 1);
	cr_assert_not(virtqueue_has_work(&d->vq));
	cr_assert_eq(pop(d), 0);

	virtqueue_push(&d->vq, 3, 42);
	cr_assert_eq(used_idx(d), 1);
	cr_assert_eq(get32(d, USED_GPA + 4), 3);
	cr_assert_eq(get32(d, USED_GPA + 8), 42);
	cr_assert(virtqueue_should_notify(&d->vq));
	drv_free(d);
}

Test(virtqueue, zero_length_buffers_are_skipped)
{
	struct drv *d = drv_enabled(4, false, false);
	/* A zero-length buffer's address is never used, so it need not be in RAM. */
	put_desc(d, 0, 0xdead00000000ull, 0, VIRTQ_DESC_F_NEXT, 1);
	put_desc(d, 1, BUF_GPA, 8, VIRTQ_DESC_F_WRITE, 0);
	publish(d, 0);
	cr_assert_eq(pop(d), 1, "%s", d->err);
	cr_assert_eq(d->elem->out_num, 0);
	cr_assert_eq(d->elem->in_num, 1);
	cr_assert_eq(d->elem->in_len, 8);
	drv_free(d);
}

Test(virtqueue, buffer_ending_at_ram_end_is_accepted)
{
	struct drv *d = drv_enabled(4, false, false);
	put_desc(d, 0, RAM_SIZE - 16, 16, 0, 0);
	publish(d, 0);
	cr_assert_eq(pop(d), 1, "%s", d->err);
	cr_assert_eq(d->elem->out[0].iov_base, d->ram + RAM_SIZE - 16);
	drv_free(d);
}

Test(virtqueue, several_chains_and_ring_wrap)
{
	struct drv *d = drv_enabled(4, false, false);
	for (unsigned round = 0; round < 10; round++) {
		for (uint16_t i = 0; i < 4; i++) {
			put_desc(d, i, BUF_GPA + i * 64, 10 + i, VIRTQ_DESC_F_WRITE, 0);
			publish(d, (uint16_t)(3 - i));
		}
		for (uint16_t i = 0; i < 4; i++) {
			cr_assert_eq(pop(d), 1, "%s", d->err);
			cr_assert_eq(d->elem->head, 3 - i);
			cr_assert_eq(d->elem->in_len, 10 + 3 - i);
			virtqueue_push(&d->vq, d->elem->head, 1);
		}
		cr_assert_eq(pop(d), 0);
	}
	cr_assert_eq(used_idx(d), 40);
	drv_free(d);
}

Test(virtqueue, unpop_returns_the_chain)
{
	struct drv *d = drv_enabled(4, false, false);
	put_desc(d, 2, BUF_GPA, 4, 0, 0);
	publish(d, 2);
	cr_assert_eq(pop(d), 1);
	virtqueue_unpop(&d->vq);
	cr_assert(virtqueue_has_work(&d->vq));
	cr_assert_eq(pop(d), 1);
	cr_assert_eq(d->elem->head, 2);
	drv_free(d);
}

Test(virtqueue, indirect_table)
{
	struct drv *d = drv_enabled(4, true, false);
	put_desc_at(d, IND_GPA, 0, BUF_GPA, 10, VIRTQ_DESC_F_NEXT, 2);
	put_desc_at(d, IND_GPA, 2, BUF_GPA + 100, 20, VIRTQ_DESC_F_NEXT, 1);
	put_desc_at(d, IND_GPA, 1, BUF_GPA + 200, 30, VIRTQ_DESC_F_WRITE, 0);
	/* The WRITE flag on the indirect descriptor itself is ignored (2.7.5.3.2). */
	put_desc(d, 1, IND_GPA, 3 * 16, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_WRITE, 0);
	publish(d, 1);
	cr_assert_eq(pop(d), 1, "%s", d->err);
	struct virtq_elem *e = d->elem;
	cr_assert_eq(e->head, 1);
	cr_assert_eq(e->out_num, 2);
	cr_assert_eq(e->in_num, 1);
	cr_assert_eq(e->out[0].iov_base, d->ram + BUF_GPA);
	cr_assert_eq(e->out[1].iov_base, d->ram + BUF_GPA + 100);
	cr_assert_eq(e->in[0].iov_base, d->ram + BUF_GPA + 200);
	cr_assert_eq(e->out_len, 30);
	cr_assert_eq(e->in_len, 30);
	drv_free(d);
}

Test(virtqueue, direct_descriptors_then_indirect)
{
	struct drv *d = drv_enabled(4, true, false);
	put_desc(d, 0, BUF_GPA, 12, VIRTQ_DESC_F_NEXT, 3);
	put_desc(d, 3, IND_GPA + 8, 16, VIRTQ_DESC_F_INDIRECT, 0); /* unaligned table is fine */
	put_desc_at(d, IND_GPA + 8, 0, BUF_GPA + 64, 7, VIRTQ_DESC_F_WRITE, 0);
	publish(d, 0);
	cr_assert_eq(pop(d), 1, "%s", d->err);
	cr_assert_eq(d->elem->out_num, 1);
	cr_assert_eq(d->elem->in_num, 1);
	cr_assert_eq(d->elem->in[0].iov_base, d->ram + BUF_GPA + 64);
	cr_assert_eq(d->elem->in_len, 7);
	drv_free(d);
}

Test(virtqueue, full_indirect_table_of_1024)
{
	struct drv *d = drv_enabled(2, true, false);
	for (uint16_t i = 0; i < VIRTQ_MAX_SIZE; i++)
		put_desc_at(d, IND_GPA, i, BUF_GPA + i, 1,
			    i + 1 < VIRTQ_MAX_SIZE ? VIRTQ_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	put_desc(d, 0, IND_GPA, 16 * VIRTQ_MAX_SIZE, VIRTQ_DESC_F_INDIRECT, 0);
	publish(d, 0);
	cr_assert_eq(pop(d), 1, "%s", d->err);
	cr_assert_eq(d->elem->out_num, VIRTQ_MAX_SIZE);
	cr_assert_eq(d->elem->out_len, VIRTQ_MAX_SIZE);
	drv_free(d);
}

Test(virtqueue, direct_prefix_overflowing_iovecs)
{
	struct drv *d = drv_enabled(2, true, false);
	for (uint16_t i = 0; i < VIRTQ_MAX_SIZE; i++)
		put_desc_at(d, IND_GPA, i, BUF_GPA + i, 1,
			    i + 1 < VIRTQ_MAX_SIZE ? VIRTQ_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	put_desc(d, 0, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 1);
	put_desc(d, 1, IND_GPA, 16 * VIRTQ_MAX_SIZE, VIRTQ_DESC_F_INDIRECT, 0);
	publish(d, 0);
	expect_pop_error(d, "more than 1024 device-readable buffers");
	drv_free(d);
}

Test(virtqueue, queue_size_1024)
{
	struct drv *d = drv_enabled(VIRTQ_MAX_SIZE, false, false);
	/* One chain through all 1024 descriptors, in reverse order. */
	for (unsigned i = 0; i < VIRTQ_MAX_SIZE; i++)
		put_desc(d, (uint16_t)i, BUF_GPA + 4 * i, 4, i ? VIRTQ_DESC_F_NEXT : 0,
			 (uint16_t)(i - 1));
	publish(d, VIRTQ_MAX_SIZE - 1);
	cr_assert_eq(pop(d), 1, "%s", d->err);
	cr_assert_eq(d->elem->out_num, VIRTQ_MAX_SIZE);
	cr_assert_eq(d->elem->out_len, 4 * VIRTQ_MAX_SIZE);
	cr_assert_eq(d->elem->out[0].iov_base, d->ram + BUF_GPA + 4 * (VIRTQ_MAX_SIZE - 1));
	cr_assert_eq(d->elem->out[VIRTQ_MAX_SIZE - 1].iov_base, d->ram + BUF_GPA);
	/* Then a full ring of one-descriptor chains, exactly size entries ahead. */
	for (unsigned i = 0; i < VIRTQ_MAX_SIZE; i++) {
		put_desc(d, (uint16_t)i, BUF_GPA + 4 * i, 4, VIRTQ_DESC_F_WRITE, 0);
		publish(d, (uint16_t)i);
	}
	for (unsigned i = 0; i < VIRTQ_MAX_SIZE; i++) {
		cr_assert_eq(pop(d), 1, "%u: %s", i, d->err);
		cr_assert_eq(d->elem->head, i);
		virtqueue_push(&d->vq, d->elem->head, 4);
	}
	cr_assert_eq(pop(d), 0);
	cr_assert_eq(used_idx(d), VIRTQ_MAX_SIZE);
	cr_assert_eq(get32(d, USED_GPA + 4 + 8 * (VIRTQ_MAX_SIZE - 1)), VIRTQ_MAX_SIZE - 1);
	drv_free(d);
}

/* Malformed chains. */

Test(virtqueue, chain_loop)
{
	struct drv *d = drv_enabled(8, false, false);
	put_desc(d, 0, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 1);
	put_desc(d, 1, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 0);
	publish(d, 0);
	expect_pop_error(d, "descriptor chain loops or exceeds queue size 8");
	drv_free(d);
}

Test(virtqueue, self_loop)
{
	struct drv *d = drv_enabled(1, false, false);
	put_desc(d, 0, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 0);
	publish(d, 0);
	expect_pop_error(d, "descriptor chain loops or exceeds queue size 1");
	drv_free(d);
}

Test(virtqueue, chain_longer_than_size)
{
	/* All descriptors valid and distinct up to size, then the last points back: size + 1. */
	struct drv *d = drv_enabled(4, false, false);
	for (uint16_t i = 0; i < 4; i++)
		put_desc(d, i, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, (uint16_t)((i + 1) % 4));
	publish(d, 2);
	expect_pop_error(d, "loops or exceeds queue size 4");
	drv_free(d);
}

Test(virtqueue, next_index_out_of_range)
{
	struct drv *d = drv_enabled(8, false, false);
	put_desc(d, 0, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 8);
	publish(d, 0);
	expect_pop_error(d, "next 8 >= queue size 8");
	drv_free(d);
}

Test(virtqueue, head_out_of_range)
{
	struct drv *d = drv_enabled(8, false, false);
	publish(d, 8);
	expect_pop_error(d, "head 8 >= queue size 8");
	drv_free(d);
}

Test(virtqueue, buffer_past_ram)
{
	struct drv *d = drv_enabled(4, false, false);
	put_desc(d, 0, RAM_SIZE - 16, 17, 0, 0);
	publish(d, 0);
	expect_pop_error(d, "buffer 0xffff0 +17 outside guest RAM");
	drv_free(d);
}

Test(virtqueue, buffer_address_wraps)
{
	struct drv *d = drv_enabled(4, false, false);
	put_desc(d, 0, UINT64_MAX - 7, 16, 0, 0);
	publish(d, 0);
	expect_pop_error(d, "buffer 0xfffffffffffffff8 +16 outside guest RAM");
	drv_free(d);
}

Test(virtqueue, total_length_over_u32)
{
	/* 4 GiB of buffers need RAM that large: a 5 GiB lazily-mapped guest. */
	struct drv *d = drv_new(4, false, false);
	uint64_t size = 5ull << 30;
	uint8_t *big = mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	cr_assert_neq(big, MAP_FAILED);
	guest_mem_init_with(&d->mem, big, size);
	memcpy(big, d->ram, RAM_SIZE); /* same ring layout, in the new RAM */
	uint8_t *small = d->ram;
	d->ram = big;
	cr_assert_eq(virtqueue_enable(&d->vq, &d->mem, d->err, sizeof(d->err)), 0, "%s", d->err);
	/* Writable total 0xffffffff is fine; readable 0x80000000 * 2 is one too many. */
	put_desc(d, 0, 0x100000000ull, 0x80000000u, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 1);
	put_desc(d, 1, 0x100000000ull, 0x7fffffffu, VIRTQ_DESC_F_WRITE, 0);
	publish(d, 0);
	cr_assert_eq(pop(d), 1, "%s", d->err);
	cr_assert_eq(d->elem->in_len, UINT32_MAX);
	put_desc(d, 2, 0x100000000ull, 0x80000000u, VIRTQ_DESC_F_NEXT, 3);
	put_desc(d, 3, 0x100000000ull, 0x80000000u, 0, 0);
	publish(d, 2);
	expect_pop_error(d, "total device-readable length exceeds 4 GiB - 1");
	d->ram = small;
	munmap(big, size);
	drv_free(d);
}

Test(virtqueue, readable_after_writable)
{
	struct drv *d = drv_enabled(4, false, false);
	put_desc(d, 0, BUF_GPA, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	put_desc(d, 1, BUF_GPA, 1, 0, 0);
	publish(d, 0);
	expect_pop_error(d, "device-readable buffer 0x40000 after a device-writable one");
	drv_free(d);
}

Test(virtqueue, readable_in_indirect_after_writable_direct)
{
	struct drv *d = drv_enabled(4, true, false);
	put_desc(d, 0, BUF_GPA, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	put_desc(d, 1, IND_GPA, 16, VIRTQ_DESC_F_INDIRECT, 0);
	put_desc_at(d, IND_GPA, 0, BUF_GPA, 1, 0, 0);
	publish(d, 0);
	expect_pop_error(d, "after a device-writable one");
	drv_free(d);
}

Test(virtqueue, nested_indirect)
{
	struct drv *d = drv_enabled(4, true, false);
	put_desc(d, 0, IND_GPA, 32, VIRTQ_DESC_F_INDIRECT, 0);
	put_desc_at(d, IND_GPA, 0, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 1);
	put_desc_at(d, IND_GPA, 1, IND_GPA, 32, VIRTQ_DESC_F_INDIRECT, 0);
	publish(d, 0);
	expect_pop_error(d, "nested indirect descriptor");
	drv_free(d);
}

Test(virtqueue, indirect_not_negotiated)
{
	struct drv *d = drv_enabled(4, false, false);
	put_desc(d, 0, IND_GPA, 16, VIRTQ_DESC_F_INDIRECT, 0);
	put_desc_at(d, IND_GPA, 0, BUF_GPA, 1, 0, 0);
	publish(d, 0);
	expect_pop_error(d, "VIRTIO_RING_F_INDIRECT_DESC not negotiated");
	drv_free(d);
}

Test(virtqueue, indirect_with_next)
{
	struct drv *d = drv_enabled(4, true, false);
	put_desc(d, 0, IND_GPA, 16, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 1);
	put_desc(d, 1, BUF_GPA, 1, 0, 0);
	put_desc_at(d, IND_GPA, 0, BUF_GPA, 1, 0, 0);
	publish(d, 0);
	expect_pop_error(d, "both INDIRECT and NEXT");
	drv_free(d);
}

static void check_bad_indirect_len(uint32_t len)
{
	struct drv *d = drv_enabled(4, true, false);
	put_desc(d, 0, IND_GPA, len, VIRTQ_DESC_F_INDIRECT, 0);
	publish(d, 0);
	expect_pop_error(d, "is not a non-zero multiple of 16 up to 16384");
	drv_free(d);
}

Test(virtqueue, indirect_len_not_multiple_of_16)
{
	check_bad_indirect_len(24);
}

Test(virtqueue, indirect_len_zero)
{
	check_bad_indirect_len(0);
}

Test(virtqueue, indirect_len_too_big)
{
	check_bad_indirect_len(16 * (VIRTQ_MAX_SIZE + 1));
}

Test(virtqueue, indirect_table_outside_ram)
{
	struct drv *d = drv_enabled(4, true, false);
	put_desc(d, 0, RAM_SIZE - 16, 32, VIRTQ_DESC_F_INDIRECT, 0);
	publish(d, 0);
	expect_pop_error(d, "indirect table 0xffff0 +32 outside guest RAM");
	drv_free(d);
}

Test(virtqueue, indirect_loop_and_bad_next)
{
	struct drv *d = drv_enabled(4, true, false);
	put_desc(d, 0, IND_GPA, 32, VIRTQ_DESC_F_INDIRECT, 0);
	put_desc_at(d, IND_GPA, 0, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 1);
	put_desc_at(d, IND_GPA, 1, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 0);
	publish(d, 0);
	expect_pop_error(d, "indirect chain loops or exceeds its 2 entries");
	put_desc_at(d, IND_GPA, 1, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 2);
	expect_pop_error(d, "indirect next 2 >= indirect table size 2");
	put_desc_at(d, IND_GPA, 1, RAM_SIZE, 1, 0, 0);
	expect_pop_error(d, "buffer 0x100000 +1 outside guest RAM");
	/* Once the driver fixes it, the same entry pops. */
	put_desc_at(d, IND_GPA, 1, BUF_GPA, 1, 0, 0);
	cr_assert_eq(pop(d), 1, "%s", d->err);
	cr_assert_eq(d->elem->out_num, 2);
	drv_free(d);
}

Test(virtqueue, avail_idx_jumps_past_size)
{
	struct drv *d = drv_enabled(8, false, false);
	put_desc(d, 0, BUF_GPA, 1, 0, 0);
	put16(d, AVAIL_GPA + 2, 9);
	expect_pop_error(d, "available index jumped by 9 > queue size 8");
	put16(d, AVAIL_GPA + 2, 0xffff); /* "backwards" is a huge jump too */
	expect_pop_error(d, "jumped by 65535");
	put16(d, AVAIL_GPA + 2, 8); /* exactly a full ring is legal */
	cr_assert_eq(pop(d), 1, "%s", d->err);
	drv_free(d);
}

/* Enable-time validation. */

Test(virtqueue, enable_bad_sizes)
{
	uint16_t bad[] = {0, 3, 6, 1000, 2048, 1025};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct drv *d = drv_new(bad[i], false, false);
		expect_enable_error(d, "is not a power of two in 1..1024");
		drv_free(d);
	}
	for (uint16_t s = 1; s <= VIRTQ_MAX_SIZE; s *= 2) {
		struct drv *d = drv_enabled(s, false, false);
		drv_free(d);
	}
}

Test(virtqueue, enable_misaligned_rings)
{
	struct drv *d = drv_new(8, false, false);
	d->vq.desc_gpa = DESC_GPA + 8;
	expect_enable_error(d, "descriptor table 0x1008 is not 16-byte aligned");
	d->vq.desc_gpa = DESC_GPA;
	d->vq.avail_gpa = AVAIL_GPA + 1;
	expect_enable_error(d, "available ring 0x5001 is not 2-byte aligned");
	d->vq.avail_gpa = AVAIL_GPA;
	d->vq.used_gpa = USED_GPA + 2;
	expect_enable_error(d, "used ring 0x6002 is not 4-byte aligned");
	drv_free(d);
}

Test(virtqueue, enable_rings_outside_ram)
{
	struct drv *d = drv_new(8, false, false);
	d->vq.desc_gpa = RAM_SIZE - 16 * 8 + 16; /* last descriptor past the end */
	expect_enable_error(d, "descriptor table 0xfff90 +128 outside guest RAM");
	d->vq.desc_gpa = DESC_GPA;
	d->vq.avail_gpa = RAM_SIZE - 20; /* 22 bytes: used_event past the end */
	expect_enable_error(d, "available ring 0xfffec +22 outside guest RAM");
	d->vq.avail_gpa = AVAIL_GPA;
	d->vq.used_gpa = RAM_SIZE - 68; /* 70 bytes: avail_event past the end */
	expect_enable_error(d, "used ring 0xfffbc +70 outside guest RAM");
	d->vq.used_gpa = 0xfffffffffffffff0ull;
	expect_enable_error(d, "outside guest RAM");
	d->vq.used_gpa = RAM_SIZE - 72; /* exactly fits */
	cr_assert_eq(virtqueue_enable(&d->vq, &d->mem, d->err, sizeof(d->err)), 0, "%s", d->err);
	drv_free(d);
}

Test(virtqueue, reset_forgets_rings)
{
	struct drv *d = drv_enabled(8, true, true);
	put_desc(d, 0, BUF_GPA, 1, 0, 0);
	publish(d, 0);
	cr_assert_eq(pop(d), 1);
	virtqueue_reset(&d->vq);
	cr_assert_eq(d->vq.size, 8);
	cr_assert(d->vq.indirect && d->vq.event_idx);
	cr_assert_eq(d->vq.last_avail_idx, 0);
	cr_assert_eq(d->vq.desc_gpa, 0);
	cr_assert_null(d->vq.avail);
	cr_assert_eq(pop(d), 0);
	cr_assert_not(virtqueue_has_work(&d->vq));
	drv_free(d);
}

/* Notification suppression. */

Test(virtqueue, need_event_arithmetic)
{
	/* Notify iff event is in [old, new) modulo 2^16. */
	cr_assert(virtq_need_event(0, 1, 0));
	cr_assert_not(virtq_need_event(1, 1, 0));
	cr_assert(virtq_need_event(5, 10, 0));
	cr_assert_not(virtq_need_event(10, 10, 0));
	cr_assert_not(virtq_need_event(3, 10, 5));
	cr_assert_not(virtq_need_event(0, 0, 0));
	/* Across the wrap. */
	cr_assert(virtq_need_event(0xffff, 0, 0xffff));
	cr_assert(virtq_need_event(0xffff, 1, 0xfffe));
	cr_assert(virtq_need_event(0, 1, 0xffff));
	cr_assert(virtq_need_event(0xfffe, 2, 0xfffd));
	cr_assert_not(virtq_need_event(0xfffc, 2, 0xfffd));
	cr_assert_not(virtq_need_event(2, 2, 0xfffd));
	cr_assert(virtq_need_event(1, 2, 0xfffd));
	cr_assert_not(virtq_need_event(0xffff, 0xffff, 0xfffe));
	cr_assert(virtq_need_event(0xfffe, 0xffff, 0xfffe));
}

Test(virtqueue, no_interrupt_flag)
{
	struct drv *d = drv_enabled(4, false, false);
	virtqueue_push(&d->vq, 0, 0);
	cr_assert(virtqueue_should_notify(&d->vq));
	put16(d, AVAIL_GPA, VIRTQ_AVAIL_F_NO_INTERRUPT);
	virtqueue_push(&d->vq, 0, 0);
	cr_assert_not(virtqueue_should_notify(&d->vq));
	put16(d, AVAIL_GPA, 0);
	cr_assert(virtqueue_should_notify(&d->vq));
	drv_free(d);
}

Test(virtqueue, event_idx_used_event)
{
	struct drv *d = drv_enabled(8, false, true);
	/* First check always notifies (nothing signalled yet). */
	set_used_event(d, 0);
	virtqueue_push(&d->vq, 0, 0);
	cr_assert(virtqueue_should_notify(&d->vq));
	/* Driver wants an interrupt once entry 3 is used (used idx passes 3). */
	set_used_event(d, 3);
	virtqueue_push(&d->vq, 0, 0); /* used idx 2 */
	cr_assert_not(virtqueue_should_notify(&d->vq));
	virtqueue_push(&d->vq, 0, 0); /* 3 */
	cr_assert_not(virtqueue_should_notify(&d->vq));
	virtqueue_push(&d->vq, 0, 0); /* 4: entry 3 now used */
	cr_assert(virtqueue_should_notify(&d->vq));
	/* Nothing new: no interrupt even though used_event is behind. */
	cr_assert_not(virtqueue_should_notify(&d->vq));
	/* A batch that jumps over used_event still notifies once. */
	set_used_event(d, 5);
	for (int i = 0; i < 4; i++)
		virtqueue_push(&d->vq, 0, 0);
	cr_assert(virtqueue_should_notify(&d->vq));
	cr_assert_eq(d->vq.signalled_used, 8);
	drv_free(d);
}

Test(virtqueue, event_idx_across_used_wrap)
{
	/* A driver that always asks for the next completion: 65536+ pushes through a 2-entry
	 * queue, the used index wrapping, exactly one interrupt per push. */
	struct drv *d = drv_enabled(2, false, true);
	unsigned notified = 0;
	for (unsigned i = 0; i < 65536 + 10; i++) {
		set_used_event(d, (uint16_t)i);
		virtqueue_push(&d->vq, (uint16_t)(i & 1), i);
		bool n = virtqueue_should_notify(&d->vq);
		cr_assert(n, "push %u not notified", i);
		notified += n;
	}
	cr_assert_eq(notified, 65546);
	cr_assert_eq(used_idx(d), (uint16_t)65546);
	cr_assert_eq(get32(d, USED_GPA + 4 + 8 * (65545 % 2) + 4), 65545);
	/* used_event at 0xffff reached by pushes straddling the wrap. */
	d->vq.used_idx = 0xfffd;
	d->vq.signalled_used = 0xfffd;
	set_used_event(d, 0xffff);
	virtqueue_push(&d->vq, 0, 0); /* 0xfffe */
	cr_assert_not(virtqueue_should_notify(&d->vq));
	virtqueue_push(&d->vq, 0, 0); /* 0xffff */
	cr_assert_not(virtqueue_should_notify(&d->vq));
	virtqueue_push(&d->vq, 0, 0); /* 0x0000: entry 0xffff used */
	cr_assert(virtqueue_should_notify(&d->vq));
	cr_assert_eq(used_idx(d), 0);
	virtqueue_push(&d->vq, 0, 0);
	cr_assert_not(virtqueue_should_notify(&d->vq));
	drv_free(d);
}

Test(virtqueue, event_idx_suppression_ratio_across_wrap)
{
	/* Driver asks every 4th completion: over 65536*2 pushes exactly a quarter notify. */
	struct drv *d = drv_enabled(4, false, true);
	unsigned notified = 0;
	(void)virtqueue_should_notify(&d->vq); /* make signalled_used valid */
	for (unsigned i = 0; i < 2 * 65536; i++) {
		if (i % 4 == 0)
			set_used_event(d, (uint16_t)(i + 3));
		virtqueue_push(&d->vq, 0, 0);
		notified += virtqueue_should_notify(&d->vq);
	}
	cr_assert_eq(notified, 2 * 65536 / 4);
	drv_free(d);
}

Test(virtqueue, set_notification_no_event_idx)
{
	struct drv *d = drv_enabled(4, false, false);
	cr_assert_not(virtqueue_set_notification(&d->vq, false));
	cr_assert_eq(get16(d, USED_GPA), VIRTQ_USED_F_NO_NOTIFY);
	cr_assert_not(virtqueue_set_notification(&d->vq, true));
	cr_assert_eq(get16(d, USED_GPA), 0);
	/* Work that arrived while kicks were off is reported on re-enable. */
	virtqueue_set_notification(&d->vq, false);
	put_desc(d, 0, BUF_GPA, 1, 0, 0);
	publish(d, 0);
	cr_assert(virtqueue_set_notification(&d->vq, true));
	cr_assert_eq(pop(d), 1);
	cr_assert_not(virtqueue_set_notification(&d->vq, true));
	drv_free(d);
}

Test(virtqueue, set_notification_event_idx)
{
	struct drv *d = drv_enabled(4, false, true);
	put_desc(d, 0, BUF_GPA, 1, 0, 0);
	publish(d, 0);
	publish(d, 0);
	cr_assert_not(virtqueue_set_notification(&d->vq, false));
	cr_assert_eq(get16(d, USED_GPA), 0, "flags untouched with EVENT_IDX");
	cr_assert_eq(pop(d), 1);
	cr_assert_eq(avail_event(d), 0, "disabled: avail_event left behind");
	/* Enabling with one entry still pending: avail_event = 1, and work is reported. */
	cr_assert(virtqueue_set_notification(&d->vq, true));
	cr_assert_eq(avail_event(d), 1);
	cr_assert_eq(pop(d), 1);
	cr_assert_eq(pop(d), 0);
	/* The empty pop re-armed: kick wanted when entry 2 is published. */
	cr_assert_eq(avail_event(d), 2);
	cr_assert_not(virtqueue_set_notification(&d->vq, true));
	/* Driver-side check for its next publish (old 2 -> new 3) says kick. */
	cr_assert(virtq_need_event(avail_event(d), 3, 2));
	drv_free(d);
}

Test(virtqueue, event_idx_rearm_across_avail_wrap)
{
	struct drv *d = drv_enabled(2, false, true);
	put_desc(d, 0, BUF_GPA, 1, 0, 0);
	for (unsigned i = 0; i < 65536 + 5; i++) {
		uint16_t old = d->avail_idx;
		publish(d, 0);
		/* The driver kicks only when avail_event says so; every publish must kick here
		 * because the device drains the ring each time. */
		cr_assert(virtq_need_event(avail_event(d), d->avail_idx, old), "publish %u", i);
		cr_assert_eq(pop(d), 1, "%s", d->err);
		cr_assert_eq(pop(d), 0);
		cr_assert_eq(avail_event(d), d->avail_idx);
	}
	drv_free(d);
}
