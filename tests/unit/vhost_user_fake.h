/* A fake vhost-user back end for the unit tests (test_vhost_user, test_vhost_user_frontend,
 * test_virtio_fs): a thread on one end of a socketpair that answers as a back end would and
 * records every message it is sent, with the descriptors that came with it. The request codes
 * and layouts are spelled out here from the spec, not taken from the client: the fake is the
 * tests' oracle, so a wrong code in the client shows as a mismatch.
 *
 * What the fake recorded is read after fake_stop or fake_join (the thread has ended then), or
 * while it runs under fake_lock: every request the client sends with REPLY_ACK is recorded
 * before it is answered, so all of them are there when the client's call has returned. */
#ifndef MINIVMM_TESTS_VHOST_USER_FAKE_H
#define MINIVMM_TESTS_VHOST_USER_FAKE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/backends/vhost_user.h"

enum {
	GET_FEATURES = 1,
	SET_FEATURES = 2,
	SET_OWNER = 3,
	RESET_OWNER = 4,
	SET_MEM_TABLE = 5,
	SET_VRING_NUM = 8,
	SET_VRING_ADDR = 9,
	SET_VRING_BASE = 10,
	GET_VRING_BASE = 11,
	SET_VRING_KICK = 12,
	SET_VRING_CALL = 13,
	GET_PROTOCOL_FEATURES = 15,
	SET_PROTOCOL_FEATURES = 16,
	GET_QUEUE_NUM = 17,
	SET_VRING_ENABLE = 18,
	GET_CONFIG = 24,
	SET_CONFIG = 25,
	RESET_DEVICE = 34,
};

#define V1	   0x1u /* the version in a header's flags */
#define REPLY	   0x4u
#define NEED_REPLY 0x8u

#define F_VERSION_1 (1ull << 32)
#define F_PROTOCOL  (1ull << 30)
#define P_MQ	    (1ull << 0)
#define P_REPLY_ACK (1ull << 3)
#define P_SLAVE_REQ (1ull << 5) /* one this client does not know: never negotiated */
#define P_CONFIG    (1ull << 9)

/* One message the fake received. */
struct rec {
	uint32_t req, flags, size;
	uint8_t payload[512];
	int fds[8];
	unsigned nfds;
};

struct fake {
	int fd;
	pthread_t thread;
	uint64_t features, protocol, queues;
	uint16_t vring_base;
	uint8_t config[256];
	uint32_t nack_req; /* acknowledge this request with nack_status */
	uint64_t nack_status;
	pthread_mutex_t lock; /* guards msgs and n while the thread runs */
	struct rec msgs[64];
	unsigned n;
	char bad[128]; /* what the fake could not take (checked by the test) */
};

/* Start the fake; returns the client's connection over the other end of a socketpair. */
struct vhost_user *fake_start(struct fake *f);
/* Wait for the fake to end (its peer closed: vhost_user_close, or a device's destroy), close
 * its end, check it took every message. */
void fake_join(struct fake *f);
/* Close the client (the fake sees EOF), then fake_join. */
void fake_stop(struct fake *f, struct vhost_user *vu);
void fake_lock(struct fake *f);
void fake_unlock(struct fake *f);
/* Close the descriptors the fake received. */
void fake_close_fds(struct fake *f);

/* Write all of buf on fd (a hostile peer's raw bytes). */
void fake_write_full(int fd, const void *buf, size_t len);
/* A reply on fd: header and payload in one write, attach (>= 0) passed along. */
void fake_put_reply(int fd, uint32_t req, uint32_t flags, uint32_t size, const void *payload,
		    size_t len, int attach);
void fake_put_u64(int fd, uint32_t req, uint64_t v);
/* One message from the front end: its header with any descriptors, then its payload. */
bool fake_take_msg(int fd, struct rec *m);

uint64_t rec_u64(const struct rec *m, size_t off);
uint32_t rec_u32(const struct rec *m, size_t off);
/* Message i is req with these flags and payload size (and no descriptor unless it may carry
 * one). */
const struct rec *fake_expect(struct fake *f, unsigned i, uint32_t req, uint32_t flags,
			      uint32_t size);
/* The index of the first message req at or after from, or f->n when none. */
unsigned fake_find(const struct fake *f, unsigned from, uint32_t req);

/* An eventfd the fake received is ours: what is written to it reads back from ours. */
void assert_same_eventfd(int received, int ours);
/* Two descriptors name the same file (device and inode). */
void assert_same_file(int a, int b);

#endif
