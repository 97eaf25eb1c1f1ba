#include "virtio_blk.h"

#include "lib.h"
#include "x86.h"

#define VIRTIO_BLK_F_RO	   5
#define VIRTIO_BLK_F_FLUSH 9

/* Config space offsets (5.2.4). */
#define CFG_CAPACITY 0

static struct vblk_slot {
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
	volatile uint8_t status;
} slots[VBLK_MAX_INFLIGHT] __attribute__((aligned(64)));

struct virtio_dev **vblk_devices(unsigned *n)
{
	static struct virtio_dev_set set;
	return virtio_devices_kept(&set, VIRTIO_ID_BLOCK, n);
}

/* 32-bit config reads: both transports allow them, and each is one exit. */
static uint32_t cfg32(struct virtio_dev *d, unsigned off)
{
	uint64_t base = d->transport == VIRTIO_MMIO ? d->base + 0x100 : d->devcfg;
	return mmio_read32(base + off);
}

uint64_t vblk_pattern(uint64_t seed, uint64_t offset)
{
	/* splitmix64 of (seed, word index): cheap, and every word differs. */
	uint64_t x = seed + (offset / 8) * 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

const char *vblk_open(struct vblk *b, struct virtio_dev *d)
{
	memset(b, 0, sizeof(*b));
	b->d = d;
	const char *err = virtio_init(d, 1ull << VIRTIO_BLK_F_RO | 1ull << VIRTIO_BLK_F_FLUSH, 1);
	if (err)
		return err;
	if (d->transport == VIRTIO_PCI && !d->devcfg)
		return "virtio-blk: no device configuration structure";
	b->ro = d->features >> VIRTIO_BLK_F_RO & 1;
	b->capacity = cfg32(d, CFG_CAPACITY) | (uint64_t)cfg32(d, CFG_CAPACITY + 4) << 32;
	static char id[24] __attribute__((aligned(8)));
	memset(id, 0, sizeof(id));
	uint8_t status;
	if ((err = vblk_sync(b, VBLK_T_GET_ID, 0, id, 20, true, &status)))
		return err;
	if (status != VBLK_S_OK)
		return "virtio-blk: GET_ID failed";
	memcpy(b->serial, id, 20);
	b->serial[20] = 0;
	return 0;
}

int vblk_post(struct vblk *b, uint32_t type, uint64_t sector, void *buf, uint32_t len,
	      bool dev_writes)
{
	int s = -1;
	for (unsigned i = 0; i < VBLK_MAX_INFLIGHT; i++)
		if (!b->slot_busy[i]) {
			s = (int)i;
			break;
		}
	if (s < 0)
		return -1;
	struct vblk_slot *sl = &slots[s];
	sl->type = type;
	sl->reserved = 0;
	sl->sector = sector;
	sl->status = 0xee;
	struct virtq_buf bufs[3] = {{(uint64_t)sl, 16, false}};
	unsigned n = 1;
	if (len)
		bufs[n++] = (struct virtq_buf){(uint64_t)buf, len, dev_writes};
	bufs[n++] = (struct virtq_buf){(uint64_t)&sl->status, 1, true};
	int head = virtq_add(&b->d->vq[0], bufs, n);
	if (head < 0)
		return -1;
	b->slot_busy[s] = true;
	b->slot_of[head] = (uint16_t)s;
	b->inflight++;
	return s;
}

void vblk_kick(struct vblk *b)
{
	virtq_kick(&b->d->vq[0], false);
}

const char *vblk_wait(struct vblk *b, unsigned *slot, uint8_t *status)
{
	uint16_t id;
	uint32_t len;
	const char *err = virtq_wait(&b->d->vq[0], &id, &len, VBLK_TIMEOUT_MS);
	if (err)
		return err;
	unsigned s = b->slot_of[id];
	if (s >= VBLK_MAX_INFLIGHT || !b->slot_busy[s])
		return "virtio-blk: completion for a request not in flight";
	b->slot_busy[s] = false;
	b->inflight--;
	*slot = s;
	*status = slots[s].status;
	return 0;
}

const char *vblk_sync(struct vblk *b, uint32_t type, uint64_t sector, void *buf, uint32_t len,
		      bool dev_writes, uint8_t *status)
{
	if (vblk_post(b, type, sector, buf, len, dev_writes) < 0)
		return "virtio-blk: queue full";
	vblk_kick(b);
	unsigned slot;
	return vblk_wait(b, &slot, status);
}
