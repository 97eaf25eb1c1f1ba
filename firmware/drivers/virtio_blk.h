/*
 * virtio-blk driver for the probe (virtio 1.2, 5.2): one request queue, requests of
 * header (16 bytes, device-readable), optional data, status byte (device-writable), several in
 * flight, completions found by polling the used ring.
 */
#ifndef VIRTIO_BLK_H
#define VIRTIO_BLK_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio.h"

#define VIRTIO_ID_BLOCK 2

#define VBLK_T_IN	  0
#define VBLK_T_OUT	  1
#define VBLK_T_FLUSH	  4
#define VBLK_T_GET_ID	  8
#define VBLK_S_OK	  0
#define VBLK_S_IOERR	  1
#define VBLK_S_UNSUPP	  2
#define VBLK_MAX_INFLIGHT 64
#define VBLK_TIMEOUT_MS	  10000

struct vblk {
	struct virtio_dev *d;
	uint64_t capacity; /* 512-byte sectors */
	bool ro;
	char serial[21];
	unsigned inflight;
	uint16_t slot_of[VIRTQ_MAX_SIZE]; /* head descriptor -> request slot */
	bool slot_busy[VBLK_MAX_INFLIGHT];
};

/* Every virtio-blk device, in discovery order. */
struct virtio_dev **vblk_devices(unsigned *n);
/* Initialise d and read its configuration and serial number. */
const char *vblk_open(struct vblk *b, struct virtio_dev *d);
/* Queue a request (no kick); buf/len may be 0 for none. dev_writes: the data is read from the
 * disk into buf. Returns the slot (0..VBLK_MAX_INFLIGHT-1) or -1 if none is free. */
int vblk_post(struct vblk *b, uint32_t type, uint64_t sector, void *buf, uint32_t len,
	      bool dev_writes);
void vblk_kick(struct vblk *b);
/* Wait for one completion: its slot and status byte. */
const char *vblk_wait(struct vblk *b, unsigned *slot, uint8_t *status);
/* One request, synchronously. */
const char *vblk_sync(struct vblk *b, uint32_t type, uint64_t sector, void *buf, uint32_t len,
		      bool dev_writes, uint8_t *status);

/* The test pattern: 64-bit words of a mix of seed and the word's byte offset on the disk. */
uint64_t vblk_pattern(uint64_t seed, uint64_t offset);

#endif
