/* The vhost-user front end's protocol client (QEMU's docs/interop/vhost-user.rst): the messages
 * that hand a device's memory and vrings to a back end in another process (virtiofsd,
 * qemu-storage-daemon) over a Unix stream socket, file descriptors passed with SCM_RIGHTS.
 *
 * Every call is synchronous: it sends its request and waits for the reply (or the REPLY_ACK
 * acknowledgement) for at most the connection's timeout. Every reply is hostile input: one that
 * does not fit the request (code, flags, size, a descriptor attached, a value out of range), a
 * back end that closes or never answers, marks the connection broken with a one-line reason,
 * and every later call fails at once with that same reason. Nothing is logged here: the caller
 * decides what a failure means (a device that needs reset) and logs it, once.
 *
 * Not thread-safe: one thread talks to a connection at a time. */
#ifndef MINIVMM_VHOST_USER_H
#define MINIVMM_VHOST_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Feature bit 30 of GET_FEATURES/SET_FEATURES: the back end speaks protocol features. */
#define VHOST_USER_F_PROTOCOL_FEATURES 30

/* Protocol feature bits this client knows (it negotiates no other). */
#define VHOST_USER_PROTOCOL_F_MQ	   0
#define VHOST_USER_PROTOCOL_F_REPLY_ACK	   3
#define VHOST_USER_PROTOCOL_F_CONFIG	   9
#define VHOST_USER_PROTOCOL_F_RESET_DEVICE 13
#define VHOST_USER_PROTOCOL_KNOWN                                                                  \
	((1ull << VHOST_USER_PROTOCOL_F_MQ) | (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |          \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIG) | (1ull << VHOST_USER_PROTOCOL_F_RESET_DEVICE))

/* How long each reply is awaited unless vhost_user_set_timeout says otherwise. */
#define VHOST_USER_DEFAULT_TIMEOUT_MS 5000
/* SET_MEM_TABLE carries at most this many regions (and as many descriptors). */
#define VHOST_USER_MAX_REGIONS 8
/* Queues a connection may have: a vring's index travels in 8 bits (SET_VRING_KICK/CALL). */
#define VHOST_USER_MAX_QUEUES 256
/* The largest config space access (GET_CONFIG/SET_CONFIG), as QEMU's front end has it. */
#define VHOST_USER_MAX_CONFIG 256
/* A split ring's size is a power of two up to this. */
#define VHOST_USER_MAX_VRING_SIZE 32768

struct vhost_user;

/* One region of guest memory the back end maps: guest-physical address, size, where it is
 * mapped in this process (the vrings' addresses are given in this space), and the descriptor
 * and offset the back end maps it from (a memfd, MAP_SHARED). */
struct vhost_user_region {
	uint64_t guest_addr;
	uint64_t size;
	uint64_t user_addr;
	uint64_t mmap_offset;
	int fd;
};

/* One vring as the guest's driver set it up: its index, size (a power of two), the user
 * addresses of its descriptor table, available and used rings, the available index the back
 * end starts from, and the eventfds: kick (the guest's notifications, which the back end
 * reads) and call (the back end's interrupts, which it writes). A descriptor < 0 is sent as
 * "none" (the NOFD bit): the back end polls the ring, or nobody is interrupted. */
struct vhost_user_vring {
	unsigned index;
	unsigned size;
	uint64_t desc_addr;
	uint64_t avail_addr;
	uint64_t used_addr;
	uint16_t base;
	int kick_fd;
	int call_fd;
};

/* What the handshake learnt. */
struct vhost_user_info {
	uint64_t features;	    /* the back end's device features (GET_FEATURES) */
	uint64_t protocol_features; /* negotiated: offered & wanted & VHOST_USER_PROTOCOL_KNOWN */
	unsigned queues;	    /* GET_QUEUE_NUM with MQ, else 0: the device type decides */
};

/* Connect to the back end's socket at path. A socket not there yet, or not yet listening, is
 * tried again every 10 ms for up to wait_ms (0: once), so a back end just started can be
 * awaited. Returns NULL with a one-line reason in err. */
struct vhost_user *vhost_user_connect(const char *path, int wait_ms, char *err, size_t errlen);

/* A connection over fd, an already connected AF_UNIX stream socket (a socketpair in the tests),
 * which it owns from now on (closed by vhost_user_close, also when this fails). name is for the
 * error lines. NULL only when out of memory. */
struct vhost_user *vhost_user_from_fd(int fd, const char *name);

/* How long each later reply is awaited, in milliseconds (> 0). */
void vhost_user_set_timeout(struct vhost_user *vu, int timeout_ms);

/* The session's start: GET_FEATURES; with VHOST_USER_F_PROTOCOL_FEATURES offered,
 * GET_PROTOCOL_FEATURES and SET_PROTOCOL_FEATURES with what both sides want (want_protocol &
 * VHOST_USER_PROTOCOL_KNOWN; REPLY_ACK from then on acknowledges every request that has no
 * reply of its own); SET_OWNER; with MQ, GET_QUEUE_NUM (1..VHOST_USER_MAX_QUEUES). Fills info.
 * Returns 0, or -1 (vhost_user_error says why). */
int vhost_user_handshake(struct vhost_user *vu, uint64_t want_protocol,
			 struct vhost_user_info *info);

/* SET_FEATURES: the device features the driver accepted (a subset of info.features), plus
 * VHOST_USER_F_PROTOCOL_FEATURES when the back end offered it (added here). */
int vhost_user_set_features(struct vhost_user *vu, uint64_t features);

/* SET_MEM_TABLE: n (1..VHOST_USER_MAX_REGIONS) regions, each fd passed along (kept open: the
 * caller owns them). */
int vhost_user_set_mem_table(struct vhost_user *vu, const struct vhost_user_region *regions,
			     unsigned n);

/* A vring's set-up: SET_VRING_NUM, SET_VRING_BASE, SET_VRING_ADDR, SET_VRING_CALL, then
 * SET_VRING_KICK (which starts the ring in the back end: its interrupt must be in place first).
 * The descriptors are passed along and stay the caller's. With protocol features the ring
 * starts disabled: vhost_user_enable_vring. */
int vhost_user_setup_vring(struct vhost_user *vu, const struct vhost_user_vring *vr);

/* SET_VRING_ENABLE. Without protocol features a started ring is always enabled: enabling does
 * nothing, disabling fails. */
int vhost_user_enable_vring(struct vhost_user *vu, unsigned index, bool enable);

/* GET_VRING_BASE: stops the ring and gives back the available index it had reached (the next
 * set-up's base), the stop and reset path. */
int vhost_user_get_vring_base(struct vhost_user *vu, unsigned index, uint16_t *base);

/* GET_CONFIG (CONFIG negotiated): len bytes (1..VHOST_USER_MAX_CONFIG) of the device's config
 * space from offset. A reply of no config is the back end's refusal: an error, the connection
 * stays usable. */
int vhost_user_get_config(struct vhost_user *vu, unsigned offset, void *buf, unsigned len);

/* SET_CONFIG (CONFIG negotiated): the driver wrote len bytes at offset. */
int vhost_user_set_config(struct vhost_user *vu, unsigned offset, const void *buf, unsigned len);

/* Back to the state after the handshake: RESET_DEVICE when the back end offered it, else the
 * deprecated RESET_OWNER (which back ends ignore or take as "disable all rings"). */
int vhost_user_reset(struct vhost_user *vu);

/* The reason of the last failure (one line, no newline), "" when none. */
const char *vhost_user_error(const struct vhost_user *vu);

/* Whether the connection is broken: every call fails with vhost_user_error's reason. */
bool vhost_user_broken(const struct vhost_user *vu);

/* The caller saw the back end go (its socket hung up on the event loop): broken, with why. */
void vhost_user_mark_broken(struct vhost_user *vu, const char *why);

/* Move the socket to the lowest free descriptor in [lowest, lowest + count) (where a
 * system-call filter can name it). 0, or -1 with errno (EMFILE: none free, or over the
 * descriptor limit). */
int vhost_user_move_fd(struct vhost_user *vu, int lowest, int count);

/* The socket, for the caller to watch for the back end's end (EPOLLHUP); still owned here. */
int vhost_user_fd(const struct vhost_user *vu);

/* Close the socket (the back end sees the session end) and free. NULL is fine. */
void vhost_user_close(struct vhost_user *vu);

#endif
