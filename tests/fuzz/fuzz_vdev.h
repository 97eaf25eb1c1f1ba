/* Shared by the virtio device targets (fuzz_virtio_blk, _net, _rng, _balloon): a fake guest
 * whose driver is the fuzz input. The device is brought to DRIVER_OK over 1 MiB of guest RAM
 * (heap memory, so ASan sees accesses past it) with every queue at a fixed place, then the input
 * is read as a list of operations (fv_step):
 *   op & 7 = 0 post a chain on queue (op >> 3) % nr_queues
 *            1 kick queue (op >> 3) % nr_queues, run the I/O loop
 *            2 post a chain and kick
 *            3 the target's own action (fv_device_op: backend frames, balloon target, ...)
 *            4 run the I/O loop
 *            5 config space read or write (offset, length, value)
 *            6 reset the device and bring it up again
 *            7 post a chain indirectly (one ring descriptor, table in guest RAM)
 * A chain is u8 count (1 + count % 8 descriptors), then per descriptor u8 flags (bit 0 device
 * writable, bit 1 raw guest address follows as u32, bit 2 length << 8), u16 length, and for a
 * device-readable buffer up to 64 bytes of contents (u8 count, then the bytes; the rest keeps what
 * was there, zeros at first).
 * Buffers are carved from RAM above the rings; descriptors come from a free list, as a driver's,
 * and return to it when the device uses the chain. Used entries are checked: a head that was
 * posted, a length no larger than its writable buffers (unless a raw address may have let the
 * device scribble on the rings). */
#ifndef MINIVMM_FUZZ_VDEV_H
#define MINIVMM_FUZZ_VDEV_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtio/virtio.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"
#include "base/log.h"

#define FV_RAM_SIZE   (1u << 20)
#define FV_QSIZE      64
#define FV_MAX_QUEUES 8
#define FV_RING(q)    (0x4000u * (unsigned)(q)) /* desc; avail at +0x1000, used at +0x2000 */
#define FV_DATA_START (FV_RING(FV_MAX_QUEUES))
#define FV_CHAIN_MAX  8
#define FV_FILL_MAX   64

struct fv_input {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fv_u8(struct fv_input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint16_t fv_u16(struct fv_input *in)
{
	uint16_t lo = fv_u8(in);
	return (uint16_t)(lo | fv_u8(in) << 8);
}

static inline uint32_t fv_u32(struct fv_input *in)
{
	uint32_t lo = fv_u16(in);
	return lo | (uint32_t)fv_u16(in) << 16;
}

static inline uint64_t fv_u64(struct fv_input *in)
{
	uint64_t lo = fv_u32(in);
	return lo | (uint64_t)fv_u32(in) << 32;
}

struct fv_chain {
	bool busy;
	uint8_t ndesc;
	uint16_t desc[FV_CHAIN_MAX];
	uint64_t writable;  /* bytes the device may write */
	uint64_t last_byte; /* guest address of the last device-writable byte (if writable) */
	uint8_t nw, nr;	    /* the device-writable and -readable buffers, in order */
	uint64_t w_addr[FV_CHAIN_MAX], r_addr[FV_CHAIN_MAX];
	uint32_t w_len[FV_CHAIN_MAX], r_len[FV_CHAIN_MAX];
	uint64_t posted; /* fv.clock when posted */
};

struct fv {
	uint8_t *ram;
	struct guest_mem mem;
	struct event_loop loop;
	struct virtio_dev dev;
	int nq;
	uint64_t features; /* accepted by the driver */
	uint16_t avail_idx[FV_MAX_QUEUES], used_seen[FV_MAX_QUEUES];
	bool desc_busy[FV_MAX_QUEUES][FV_QSIZE];
	struct fv_chain chain[FV_MAX_QUEUES][FV_QSIZE]; /* by head */
	uint64_t bump;					/* next free data byte */
	uint64_t clock; /* counts posts and used entries: orders requests' lifetimes */
	bool wild;	/* a raw address was used: the rings may hold anything */
	bool wrapped;	/* buffers were reused while maybe in flight: contents unreliable */
	/* Optional per-target check of each chain the device used, in order (its contents are
	 * reliable unless wild or wrapped), and what to forget when the driver resets. */
	void (*check_used)(int q, const struct fv_chain *c, uint32_t len);
	void (*on_reset)(void);
	unsigned queue_irqs, config_irqs;
};

static struct fv fv;

static void fv_signal_queue(struct virtio_dev *d, int q)
{
	(void)d;
	(void)q;
	fv.queue_irqs++;
}

static void fv_signal_config(struct virtio_dev *d)
{
	(void)d;
	fv.config_irqs++;
}

static const struct virtio_transport_ops fv_transport = {.signal_queue = fv_signal_queue,
							 .signal_config = fv_signal_config};

/* Once per process: RAM and the I/O loop. */
static inline void fv_global_init(void)
{
	if (fv.ram)
		return;
	log_set_quiet(true);
	void *p;
	if (posix_memalign(&p, 4096, FV_RAM_SIZE) || event_loop_init(&fv.loop))
		abort();
	fv.ram = p;
}

/* Per input, before the target creates its device over fv.dev / fv.mem / fv.loop. */
static inline void fv_begin(void)
{
	memset(fv.ram, 0, FV_RAM_SIZE);
	guest_mem_init_with(&fv.mem, fv.ram, FV_RAM_SIZE);
	memset(fv.avail_idx, 0, sizeof(fv.avail_idx));
	memset(fv.used_seen, 0, sizeof(fv.used_seen));
	memset(fv.desc_busy, 0, sizeof(fv.desc_busy));
	memset(fv.chain, 0, sizeof(fv.chain));
	fv.bump = FV_DATA_START;
	fv.clock = 0;
	fv.wild = fv.wrapped = false;
	fv.check_used = NULL;
	fv.on_reset = NULL;
	fv.queue_irqs = fv.config_irqs = 0;
}

/* After writing status 0 a driver waits until it reads 0 (virtio 1.2, 4.1.4.3): a device may
 * still be finishing requests from before (virtio-blk), which must not reach the rings. */
static inline void fv_await_reset(void)
{
	for (int i = 0; i < 1000 && virtio_dev_status(&fv.dev); i++)
		event_loop_run_once(&fv.loop, 10);
}

/* Driver initialisation: accept the offered features that want has, VERSION_1 always. */
static inline void fv_driver_start(uint64_t want)
{
	struct virtio_dev *d = &fv.dev;
	d->transport = &fv_transport;
	memset(fv.ram, 0, FV_DATA_START);
	memset(fv.avail_idx, 0, sizeof(fv.avail_idx));
	memset(fv.used_seen, 0, sizeof(fv.used_seen));
	memset(fv.desc_busy, 0, sizeof(fv.desc_busy));
	memset(fv.chain, 0, sizeof(fv.chain));
	fv.wrapped = false; /* nothing is in flight any more */
	virtio_dev_set_status(d, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	uint64_t offered = (uint64_t)virtio_dev_get_device_features(d, 1) << 32 |
			   virtio_dev_get_device_features(d, 0);
	fv.features = (offered & want) | 1ULL << VIRTIO_F_VERSION_1;
	virtio_dev_set_driver_features(d, 0, (uint32_t)fv.features);
	virtio_dev_set_driver_features(d, 1, (uint32_t)(fv.features >> 32));
	uint8_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	virtio_dev_set_status(d, st);
	fv.nq = d->nr_queues < FV_MAX_QUEUES ? d->nr_queues : FV_MAX_QUEUES;
	for (int q = 0; q < fv.nq; q++) {
		uint16_t size =
		    d->ops->max_queue_size < FV_QSIZE ? d->ops->max_queue_size : FV_QSIZE;
		d->vqs[q].size = size;
		d->vqs[q].desc_gpa = FV_RING(q);
		d->vqs[q].avail_gpa = FV_RING(q) + 0x1000;
		d->vqs[q].used_gpa = FV_RING(q) + 0x2000;
		virtio_dev_queue_ready(d, q, true);
	}
	virtio_dev_set_status(d, st | VIRTIO_STATUS_DRIVER_OK);
	event_loop_run_once(&fv.loop, 0);
}

static inline uint16_t fv_qsize(int q)
{
	return fv.dev.vqs[q].size ? fv.dev.vqs[q].size : 1;
}

/* Take used entries back: check each, free its descriptors. */
static inline void fv_reap(void)
{
	for (int q = 0; q < fv.nq; q++) {
		uint16_t size = fv_qsize(q);
		uint8_t *used = fv.ram + FV_RING(q) + 0x2000;
		uint16_t idx = __atomic_load_n((uint16_t *)(used + 2), __ATOMIC_ACQUIRE);
		for (; fv.used_seen[q] != idx; fv.used_seen[q]++) {
			uint32_t id, len;
			memcpy(&id, used + 4 + 8u * (fv.used_seen[q] % size), 4);
			memcpy(&len, used + 8 + 8u * (fv.used_seen[q] % size), 4);
			struct fv_chain *c = id < size ? &fv.chain[q][id] : NULL;
			if (!fv.wild && (!c || !c->busy || len > c->writable))
				abort(); /* a head never posted, used twice, or overlong */
			if (!c || !c->busy)
				continue;
			fv.clock++;
			if (fv.check_used)
				fv.check_used(q, c, len);
			c->busy = false;
			for (unsigned i = 0; i < c->ndesc; i++)
				fv.desc_busy[q][c->desc[i]] = false;
		}
	}
}

static inline void fv_run(void)
{
	event_loop_run_once(&fv.loop, 0);
	fv_reap();
}

static inline uint64_t fv_alloc(uint64_t len)
{
	if (fv.bump + len > FV_RAM_SIZE) {
		fv.bump = FV_DATA_START;
		fv.wrapped = true;
	}
	uint64_t a = fv.bump;
	fv.bump += (len + 15) & ~15ULL;
	return a;
}

static inline void fv_put_desc(uint64_t at, uint64_t addr, uint32_t len, uint16_t flags,
			       uint16_t next)
{
	uint8_t *d = fv.ram + at;
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

/* Read one chain from the input and make it available on queue q (no kick). */
static inline void fv_post(struct fv_input *in, int q, bool indirect)
{
	uint16_t size = fv_qsize(q);
	unsigned n = 1 + fv_u8(in) % FV_CHAIN_MAX;
	struct {
		uint64_t addr;
		uint32_t len;
		uint16_t flags;
	} b[FV_CHAIN_MAX];
	uint64_t writable = 0, last_byte = 0, w_addr[FV_CHAIN_MAX], r_addr[FV_CHAIN_MAX];
	uint32_t w_len[FV_CHAIN_MAX], r_len[FV_CHAIN_MAX];
	uint8_t nw = 0, nr = 0;
	for (unsigned i = 0; i < n; i++) {
		uint8_t f = fv_u8(in);
		uint64_t len = fv_u16(in);
		if (f & 4)
			len <<= 8;
		b[i].len = (uint32_t)len;
		b[i].flags = (f & 1) ? VIRTQ_DESC_F_WRITE : 0;
		if (f & 2) {
			b[i].addr = fv_u32(in);
			fv.wild = true;
		} else {
			b[i].addr = fv_alloc(len);
		}
		if (f & 1) {
			writable += len;
			if (len)
				last_byte = b[i].addr + len - 1;
			w_addr[nw] = b[i].addr;
			w_len[nw++] = (uint32_t)len;
		} else {
			r_addr[nr] = b[i].addr;
			r_len[nr++] = (uint32_t)len;
			unsigned fill = fv_u8(in) % (FV_FILL_MAX + 1);
			uint8_t *dst = guest_mem_ptr(&fv.mem, b[i].addr, fill < len ? fill : len);
			for (unsigned k = 0; k < fill; k++) {
				uint8_t v = fv_u8(in);
				if (dst && k < len)
					dst[k] = v;
			}
		}
	}
	/* Descriptors from the free list (an indirect chain needs one in the ring). */
	unsigned need = indirect ? 1 : n;
	uint16_t idx[FV_CHAIN_MAX];
	unsigned got = 0;
	for (uint16_t i = 0; i < size && got < need; i++)
		if (!fv.desc_busy[q][i])
			idx[got++] = i;
	if (got < need)
		return; /* ring full: the driver waits */
	uint64_t table = FV_RING(q);
	uint16_t tidx[FV_CHAIN_MAX];
	if (indirect) {
		table = fv_alloc(16u * n);
		for (unsigned i = 0; i < n; i++)
			tidx[i] = (uint16_t)i;
	} else {
		memcpy(tidx, idx, sizeof(idx));
	}
	for (unsigned i = 0; i < n; i++) {
		uint16_t flags = (uint16_t)(b[i].flags | (i + 1 < n ? VIRTQ_DESC_F_NEXT : 0));
		fv_put_desc(table + 16u * tidx[i], b[i].addr, b[i].len, flags,
			    i + 1 < n ? tidx[i + 1] : 0);
	}
	if (indirect)
		fv_put_desc(FV_RING(q) + 16u * idx[0], table, 16u * n, VIRTQ_DESC_F_INDIRECT, 0);
	struct fv_chain *c = &fv.chain[q][idx[0]];
	/* A byte the device must overwrite if it claims to (see fv.check_used). */
	uint8_t *lb = writable ? guest_mem_ptr(&fv.mem, last_byte, 1) : NULL;
	if (lb)
		*lb = 0xee;
	*c = (struct fv_chain){.busy = true,
			       .ndesc = (uint8_t)need,
			       .writable = writable,
			       .last_byte = last_byte,
			       .nw = nw,
			       .nr = nr,
			       .posted = fv.clock++};
	memcpy(c->w_addr, w_addr, nw * sizeof(w_addr[0]));
	memcpy(c->w_len, w_len, nw * sizeof(w_len[0]));
	memcpy(c->r_addr, r_addr, nr * sizeof(r_addr[0]));
	memcpy(c->r_len, r_len, nr * sizeof(r_len[0]));
	for (unsigned i = 0; i < need; i++) {
		c->desc[i] = idx[i];
		fv.desc_busy[q][idx[i]] = true;
	}
	uint16_t *avail = (uint16_t *)(fv.ram + FV_RING(q) + 0x1000);
	avail[2 + fv.avail_idx[q] % size] = idx[0];
	__atomic_store_n(&avail[1], ++fv.avail_idx[q], __ATOMIC_RELEASE);
}

static inline void fv_kick(int q)
{
	virtio_dev_queue_notify(&fv.dev, q);
	fv_run();
}

/* Every target defines fv_device_op and sets fv_restart_features (accepted again after a
 * reset). */
static void fv_device_op(struct fv_input *in);
static uint64_t fv_restart_features;

/* One operation of the list above. */
static inline void fv_step(struct fv_input *in)
{
	uint8_t op = fv_u8(in);
	int q = fv.nq ? (op >> 3) % fv.nq : 0;
	switch (op & 7) {
	case 0:
		fv_post(in, q, false);
		break;
	case 1:
		fv_kick(q);
		break;
	case 2:
		fv_post(in, q, false);
		fv_kick(q);
		break;
	case 3:
		fv_device_op(in);
		fv_reap();
		break;
	case 4:
		fv_run();
		break;
	case 5: {
		const struct virtio_device_ops *ops = fv.dev.ops;
		uint8_t sel = fv_u8(in);
		uint32_t len = 1u << (sel & 3), off = sel >> 2;
		uint8_t buf[8];
		uint64_t v = fv_u64(in);
		memcpy(buf, &v, 8);
		/* The transports check the range before calling the device. */
		if (off + len > ops->config_size)
			break;
		if ((op >> 3) & 1) {
			if (ops->write_config)
				ops->write_config(&fv.dev, off, buf, len);
		} else if (ops->read_config) {
			ops->read_config(&fv.dev, off, buf, len);
		}
		break;
	}
	case 6:
		virtio_dev_set_status(&fv.dev, 0);
		if (fv.on_reset)
			fv.on_reset();
		fv_await_reset();
		fv_driver_start(fv_restart_features);
		break;
	case 7:
		fv_post(in, q, true);
		if (op & 8)
			fv_kick(q);
		break;
	}
}

/* Run the operations, then reset (every request still in flight is dropped) and check that the
 * device left nothing behind. */
static inline void fv_run_ops(struct fv_input *in)
{
	for (int i = 0; i < 256 && in->n; i++)
		fv_step(in);
	for (int q = 0; q < fv.nq; q++)
		fv_kick(q);
	fv_run();
	if (getenv("FUZZ_VERBOSE")) { /* to check what seeds reach */
		fprintf(stderr, "status 0x%x broken %d features 0x%llx irqs %u/%u used",
			fv.dev.status, fv.dev.broken, (unsigned long long)fv.features,
			fv.queue_irqs, fv.config_irqs);
		for (int q = 0; q < fv.nq; q++)
			fprintf(stderr, " %u/%u", fv.used_seen[q], fv.avail_idx[q]);
		fprintf(stderr, "\n");
	}
	virtio_dev_set_status(&fv.dev, 0);
	fv_await_reset();
	fv_run(); /* bottom halves scheduled before the reset must find nothing to do */
}

#endif
