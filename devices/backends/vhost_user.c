#include "vhost_user.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* Request codes (front end to back end). */
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

/* The header's flags: the version in the low two bits, then the reply and need-reply bits. A
 * reply may carry others (libvhost-user leaves need-reply set on its acks): not checked. */
#define FLAG_VERSION_MASK 0x3u
#define FLAG_VERSION	  0x1u
#define FLAG_REPLY	  0x4u
#define FLAG_NEED_REPLY	  0x8u

/* SET_VRING_KICK/CALL's u64: the vring index in bits 0-7, bit 8 when no descriptor comes. */
#define VRING_NOFD 0x100u

#define HDR_SIZE 12u
/* The largest payload sent or received: a config access (12 + 256) or a full memory table
 * (8 + 8 * 32). */
#define CONFIG_HDR_SIZE 12u
#define REGION_SIZE	32u
#define PAYLOAD_MAX	(CONFIG_HDR_SIZE + VHOST_USER_MAX_CONFIG)
/* Descriptors a received message could carry: room for more than any sender may pass, so
 * that all of them arrive (and are closed) rather than being cut off. */
#define RECV_FDS_MAX 16

/* Retrying a socket that is not there yet (vhost_user_connect). */
#define CONNECT_RETRY_MS 10

struct vhost_user {
	int fd;
	int timeout_ms;
	bool broken;
	/* The back end offered VHOST_USER_F_PROTOCOL_FEATURES (and so it is always accepted). */
	bool protocol;
	uint64_t protocol_features; /* negotiated; REPLY_ACK counts from SET_PROTOCOL_FEATURES */
	char name[128];
	char error[320];
};

static const char *req_name(uint32_t req)
{
	switch (req) {
	case GET_FEATURES:
		return "GET_FEATURES";
	case SET_FEATURES:
		return "SET_FEATURES";
	case SET_OWNER:
		return "SET_OWNER";
	case RESET_OWNER:
		return "RESET_OWNER";
	case SET_MEM_TABLE:
		return "SET_MEM_TABLE";
	case SET_VRING_NUM:
		return "SET_VRING_NUM";
	case SET_VRING_ADDR:
		return "SET_VRING_ADDR";
	case SET_VRING_BASE:
		return "SET_VRING_BASE";
	case GET_VRING_BASE:
		return "GET_VRING_BASE";
	case SET_VRING_KICK:
		return "SET_VRING_KICK";
	case SET_VRING_CALL:
		return "SET_VRING_CALL";
	case GET_PROTOCOL_FEATURES:
		return "GET_PROTOCOL_FEATURES";
	case SET_PROTOCOL_FEATURES:
		return "SET_PROTOCOL_FEATURES";
	case GET_QUEUE_NUM:
		return "GET_QUEUE_NUM";
	case SET_VRING_ENABLE:
		return "SET_VRING_ENABLE";
	case GET_CONFIG:
		return "GET_CONFIG";
	case SET_CONFIG:
		return "SET_CONFIG";
	case RESET_DEVICE:
		return "RESET_DEVICE";
	}
	return "an unknown request";
}

static void set_error(struct vhost_user *vu, const char *fmt, va_list ap)
{
	int n = snprintf(vu->error, sizeof(vu->error), "vhost-user %s: ", vu->name);
	if (n < 0 || (size_t)n >= sizeof(vu->error))
		return;
	vsnprintf(vu->error + n, sizeof(vu->error) - (size_t)n, fmt, ap);
}

/* A failed call (bad arguments, a refusal the back end acknowledged): the connection goes on. */
__attribute__((format(printf, 2, 3))) static int fail(struct vhost_user *vu, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_error(vu, fmt, ap);
	va_end(ap);
	return -1;
}

/* The connection cannot be trusted any more (a reply that does not fit, a back end gone or
 * silent): broken for good, its first reason kept. */
__attribute__((format(printf, 2, 3))) static int broken(struct vhost_user *vu, const char *fmt, ...)
{
	if (vu->broken)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	set_error(vu, fmt, ap);
	va_end(ap);
	vu->broken = true;
	return -1;
}

static bool has_protocol(const struct vhost_user *vu, unsigned bit)
{
	return vu->protocol_features & (1ull << bit);
}

static uint64_t deadline_after(int ms)
{
	return clock_monotonic_ns() + (uint64_t)ms * 1000000ull;
}

/* Milliseconds left until deadline (rounded up, so a poll does not spin on the last one);
 * 0 once it passed. */
static int ms_left(uint64_t deadline)
{
	uint64_t now = clock_monotonic_ns();
	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999) / 1000000);
}

/* Wait until the socket is ready for events (POLLIN or POLLOUT) or the deadline passes.
 * Returns 1 when ready (or hung up: the next call says how), 0 on timeout. */
static int wait_ready(struct vhost_user *vu, short events, uint64_t deadline)
{
	for (;;) {
		int left = ms_left(deadline);
		if (left == 0)
			return 0;
		struct pollfd p = {.fd = vu->fd, .events = events};
		int rc = poll(&p, 1, left);
		if (rc > 0)
			return 1;
		if (rc < 0 && errno != EINTR)
			return 1; /* the next call reports the socket's error */
	}
}

/* Send one message; fds go with its first byte. MSG_NOSIGNAL: a back end that went away is an
 * error here (EPIPE), never a SIGPIPE that ends the VMM. Nonblocking, so a back end that does
 * not read cannot hold the caller past the timeout either. */
static int send_msg(struct vhost_user *vu, uint32_t req, uint32_t flags, const void *payload,
		    uint32_t len, const int *fds, unsigned nfds)
{
	uint8_t buf[HDR_SIZE + PAYLOAD_MAX];
	uint32_t hdr[3] = {req, flags | FLAG_VERSION, len};
	memcpy(buf, hdr, HDR_SIZE);
	if (len)
		memcpy(buf + HDR_SIZE, payload, len);
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_REGIONS)];
		struct cmsghdr align;
	} ctl;
	size_t total = HDR_SIZE + len, sent = 0;
	uint64_t deadline = deadline_after(vu->timeout_ms);
	while (sent < total) {
		struct iovec iov = {.iov_base = buf + sent, .iov_len = total - sent};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		if (nfds && sent == 0) {
			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		ssize_t n = sendmsg(vu->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (!wait_ready(vu, POLLOUT, deadline))
				return broken(vu, "sending %s: the back end took nothing for %d ms",
					      req_name(req), vu->timeout_ms);
			continue;
		}
		return broken(vu, "sending %s: %s", req_name(req),
			      n < 0 ? strerror(errno) : "nothing sent");
	}
	return 0;
}

/* Close every descriptor a received message carried; returns how many there were. */
static unsigned close_fds(struct msghdr *mh)
{
	unsigned n = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			close(fd);
			n++;
		}
	}
	return n;
}

/* Read exactly len bytes of req's reply by the deadline (started: its header came already).
 * No reply this client awaits carries a descriptor: any that come are closed, and the
 * connection is broken. */
static int recv_exact(struct vhost_user *vu, uint32_t req, void *buf, size_t len, uint64_t deadline,
		      bool started)
{
	size_t got = 0;
	while (got < len) {
		if (!wait_ready(vu, POLLIN, deadline))
			return broken(vu, "no reply to %s within %d ms", req_name(req),
				      vu->timeout_ms);
		union {
			char buf[CMSG_SPACE(sizeof(int) * RECV_FDS_MAX)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {.iov_base = (uint8_t *)buf + got, .iov_len = len - got};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf)};
		ssize_t n = recvmsg(vu->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return broken(vu, "reading the reply to %s: %s", req_name(req),
				      strerror(errno));
		unsigned fds = mh.msg_controllen ? close_fds(&mh) : 0;
		if (fds || (mh.msg_flags & MSG_CTRUNC))
			return broken(vu, "the reply to %s carried %u file descriptor%s%s",
				      req_name(req), fds, fds == 1 ? "" : "s",
				      (mh.msg_flags & MSG_CTRUNC) ? " and more" : "");
		if (n == 0)
			return broken(
			    vu, "the back end closed the connection%s (awaiting the reply to %s)",
			    got || started ? " mid-reply" : "", req_name(req));
		got += (size_t)n;
	}
	return 0;
}

/* Await req's reply: its header must name req, have version 1 and the reply bit, and announce
 * exactly size bytes (or none, when none_ok: the back end's way to refuse GET_CONFIG); then
 * the payload is read into payload. Returns the payload's size, or -1. */
static int recv_reply(struct vhost_user *vu, uint32_t req, void *payload, uint32_t size,
		      bool none_ok)
{
	uint64_t deadline = deadline_after(vu->timeout_ms);
	uint32_t hdr[3];
	if (recv_exact(vu, req, hdr, HDR_SIZE, deadline, false) < 0)
		return -1;
	if (hdr[0] != req)
		return broken(vu, "the reply to %s has request code %u", req_name(req), hdr[0]);
	if ((hdr[1] & FLAG_VERSION_MASK) != FLAG_VERSION)
		return broken(vu, "the reply to %s has version %u, not %u", req_name(req),
			      hdr[1] & FLAG_VERSION_MASK, FLAG_VERSION);
	if (!(hdr[1] & FLAG_REPLY))
		return broken(vu, "the reply to %s lacks the reply flag (flags 0x%x)",
			      req_name(req), hdr[1]);
	if (hdr[2] != size && !(none_ok && hdr[2] == 0))
		return broken(vu, "the reply to %s has a payload of %u bytes, not %u",
			      req_name(req), hdr[2], size);
	if (hdr[2] && recv_exact(vu, req, payload, hdr[2], deadline, true) < 0)
		return -1;
	return (int)hdr[2];
}

/* A request with no reply of its own; with REPLY_ACK negotiated it asks for the back end's
 * acknowledgement and waits for it: 0 is success, anything else its refusal. */
static int request(struct vhost_user *vu, uint32_t req, const void *payload, uint32_t len,
		   const int *fds, unsigned nfds)
{
	if (vu->broken)
		return -1;
	bool ack = has_protocol(vu, VHOST_USER_PROTOCOL_F_REPLY_ACK);
	if (send_msg(vu, req, ack ? FLAG_NEED_REPLY : 0, payload, len, fds, nfds) < 0)
		return -1;
	if (!ack)
		return 0;
	uint64_t status;
	if (recv_reply(vu, req, &status, sizeof(status), false) < 0)
		return -1;
	if (status != 0)
		return fail(vu, "the back end refused %s (status %llu)", req_name(req),
			    (unsigned long long)status);
	return 0;
}

static int request_u64(struct vhost_user *vu, uint32_t req, uint64_t v)
{
	return request(vu, req, &v, sizeof(v), NULL, 0);
}

static int request_state(struct vhost_user *vu, uint32_t req, unsigned index, unsigned num)
{
	uint32_t state[2] = {index, num};
	return request(vu, req, state, sizeof(state), NULL, 0);
}

/* A request whose reply is one u64 (GET_FEATURES and its kin). */
static int get_u64(struct vhost_user *vu, uint32_t req, uint64_t *v)
{
	if (vu->broken)
		return -1;
	if (send_msg(vu, req, 0, NULL, 0, NULL, 0) < 0)
		return -1;
	return recv_reply(vu, req, v, sizeof(*v), false) < 0 ? -1 : 0;
}

static struct vhost_user *new_conn(int fd, const char *name)
{
	struct vhost_user *vu = calloc(1, sizeof(*vu));
	if (!vu)
		return NULL;
	vu->fd = fd;
	vu->timeout_ms = VHOST_USER_DEFAULT_TIMEOUT_MS;
	snprintf(vu->name, sizeof(vu->name), "%s", name);
	return vu;
}

struct vhost_user *vhost_user_from_fd(int fd, const char *name)
{
	struct vhost_user *vu = new_conn(fd, name);
	if (!vu)
		close(fd);
	return vu;
}

struct vhost_user *vhost_user_connect(const char *path, int wait_ms, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "vhost-user socket path '%s' is longer than %zu characters",
			 path, sizeof(sa.sun_path) - 1);
		return NULL;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	uint64_t deadline = deadline_after(wait_ms > 0 ? wait_ms : 0);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(err, errlen, "vhost-user socket: %s", strerror(errno));
			return NULL;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			struct vhost_user *vu = vhost_user_from_fd(fd, path);
			if (!vu)
				snprintf(err, errlen, "out of memory");
			return vu;
		}
		int e = errno;
		close(fd);
		/* Not there yet, or not listening yet: a back end still starting. */
		bool early = e == ENOENT || e == ECONNREFUSED || e == EINTR;
		if (!early || ms_left(deadline) == 0) {
			snprintf(err, errlen, "cannot connect to vhost-user socket %s: %s%s", path,
				 strerror(e), wait_ms > 0 && early ? " (waited for it)" : "");
			return NULL;
		}
		struct timespec pause = {.tv_nsec = CONNECT_RETRY_MS * 1000000L};
		nanosleep(&pause, NULL);
	}
}

void vhost_user_set_timeout(struct vhost_user *vu, int timeout_ms)
{
	vu->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
}

int vhost_user_handshake(struct vhost_user *vu, uint64_t want_protocol,
			 struct vhost_user_info *info)
{
	*info = (struct vhost_user_info){0};
	if (get_u64(vu, GET_FEATURES, &info->features) < 0)
		return -1;
	vu->protocol = info->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES);
	if (vu->protocol) {
		uint64_t offered;
		if (get_u64(vu, GET_PROTOCOL_FEATURES, &offered) < 0)
			return -1;
		uint64_t use = offered & want_protocol & VHOST_USER_PROTOCOL_KNOWN;
		/* Sent before REPLY_ACK counts: the back end may not know it yet. */
		if (send_msg(vu, SET_PROTOCOL_FEATURES, 0, &use, sizeof(use), NULL, 0) < 0)
			return -1;
		vu->protocol_features = use;
		info->protocol_features = use;
	}
	if (request(vu, SET_OWNER, NULL, 0, NULL, 0) < 0)
		return -1;
	if (has_protocol(vu, VHOST_USER_PROTOCOL_F_MQ)) {
		uint64_t queues;
		if (get_u64(vu, GET_QUEUE_NUM, &queues) < 0)
			return -1;
		if (queues < 1 || queues > VHOST_USER_MAX_QUEUES)
			return broken(vu, "GET_QUEUE_NUM: %llu queues (1 to %u can be)",
				      (unsigned long long)queues, VHOST_USER_MAX_QUEUES);
		info->queues = (unsigned)queues;
	}
	return 0;
}

int vhost_user_set_features(struct vhost_user *vu, uint64_t features)
{
	if (vu->protocol)
		features |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	return request_u64(vu, SET_FEATURES, features);
}

int vhost_user_set_mem_table(struct vhost_user *vu, const struct vhost_user_region *regions,
			     unsigned n)
{
	if (vu->broken)
		return -1;
	if (n < 1 || n > VHOST_USER_MAX_REGIONS)
		return fail(vu, "SET_MEM_TABLE: %u regions (1 to %u can be)", n,
			    VHOST_USER_MAX_REGIONS);
	uint8_t payload[8 + VHOST_USER_MAX_REGIONS * REGION_SIZE];
	int fds[VHOST_USER_MAX_REGIONS];
	uint32_t count[2] = {n, 0};
	memcpy(payload, count, sizeof(count));
	for (unsigned i = 0; i < n; i++) {
		const struct vhost_user_region *r = &regions[i];
		if (r->fd < 0 || r->size == 0)
			return fail(vu, "SET_MEM_TABLE: region %u has %s", i,
				    r->fd < 0 ? "no descriptor" : "no size");
		uint64_t words[4] = {r->guest_addr, r->size, r->user_addr, r->mmap_offset};
		memcpy(payload + 8 + i * REGION_SIZE, words, REGION_SIZE);
		fds[i] = r->fd;
	}
	return request(vu, SET_MEM_TABLE, payload, 8 + n * REGION_SIZE, fds, n);
}

/* SET_VRING_KICK/CALL: the index, and the descriptor or the NOFD bit. */
static int set_vring_fd(struct vhost_user *vu, uint32_t req, unsigned index, int fd)
{
	uint64_t v = index | (fd < 0 ? VRING_NOFD : 0);
	return request(vu, req, &v, sizeof(v), fd < 0 ? NULL : &fd, fd < 0 ? 0 : 1);
}

static bool power_of_two(unsigned v)
{
	return v && !(v & (v - 1));
}

int vhost_user_setup_vring(struct vhost_user *vu, const struct vhost_user_vring *vr)
{
	if (vu->broken)
		return -1;
	if (vr->index >= VHOST_USER_MAX_QUEUES)
		return fail(vu, "vring %u: indexes go up to %u", vr->index,
			    VHOST_USER_MAX_QUEUES - 1);
	if (!power_of_two(vr->size) || vr->size > VHOST_USER_MAX_VRING_SIZE)
		return fail(vu, "vring %u: size %u is not a power of two up to %u", vr->index,
			    vr->size, VHOST_USER_MAX_VRING_SIZE);
	struct {
		uint32_t index, flags;
		uint64_t desc, used, avail, log;
	} addr = {.index = vr->index,
		  .desc = vr->desc_addr,
		  .used = vr->used_addr,
		  .avail = vr->avail_addr};
	_Static_assert(sizeof(addr) == 40, "vring address description");
	if (request_state(vu, SET_VRING_NUM, vr->index, vr->size) < 0 ||
	    request_state(vu, SET_VRING_BASE, vr->index, vr->base) < 0 ||
	    request(vu, SET_VRING_ADDR, &addr, sizeof(addr), NULL, 0) < 0 ||
	    set_vring_fd(vu, SET_VRING_CALL, vr->index, vr->call_fd) < 0 ||
	    set_vring_fd(vu, SET_VRING_KICK, vr->index, vr->kick_fd) < 0)
		return -1;
	return 0;
}

int vhost_user_enable_vring(struct vhost_user *vu, unsigned index, bool enable)
{
	if (vu->broken)
		return -1;
	if (index >= VHOST_USER_MAX_QUEUES)
		return fail(vu, "vring %u: indexes go up to %u", index, VHOST_USER_MAX_QUEUES - 1);
	if (!vu->protocol) {
		if (enable)
			return 0; /* without protocol features a started ring is enabled */
		return fail(vu, "vring %u: without protocol features no ring can be disabled",
			    index);
	}
	return request_state(vu, SET_VRING_ENABLE, index, enable ? 1 : 0);
}

int vhost_user_get_vring_base(struct vhost_user *vu, unsigned index, uint16_t *base)
{
	if (vu->broken)
		return -1;
	if (index >= VHOST_USER_MAX_QUEUES)
		return fail(vu, "vring %u: indexes go up to %u", index, VHOST_USER_MAX_QUEUES - 1);
	uint32_t state[2] = {index, 0};
	if (send_msg(vu, GET_VRING_BASE, 0, state, sizeof(state), NULL, 0) < 0 ||
	    recv_reply(vu, GET_VRING_BASE, state, sizeof(state), false) < 0)
		return -1;
	if (state[0] != index)
		return broken(vu, "GET_VRING_BASE of vring %u: the reply is for vring %u", index,
			      state[0]);
	/* A split ring's index is 16 bits; a packed ring's wrap counter (bit 15 of a 16-bit
	 * value, in the spec's later versions) is not negotiated here. */
	if (state[1] > 0xffff)
		return broken(vu, "GET_VRING_BASE of vring %u: base %u is beyond 65535", index,
			      state[1]);
	*base = (uint16_t)state[1];
	return 0;
}

/* The config space access a GET_CONFIG/SET_CONFIG carries: offset, size, flags (0: a driver's
 * write), then the bytes. */
static uint32_t config_payload(uint8_t *p, unsigned offset, const void *buf, unsigned len)
{
	uint32_t words[3] = {offset, len, 0};
	memcpy(p, words, sizeof(words));
	if (buf)
		memcpy(p + CONFIG_HDR_SIZE, buf, len);
	else
		memset(p + CONFIG_HDR_SIZE, 0, len);
	return CONFIG_HDR_SIZE + len;
}

static int config_checks(struct vhost_user *vu, const char *what, unsigned offset, unsigned len)
{
	if (vu->broken)
		return -1;
	if (!has_protocol(vu, VHOST_USER_PROTOCOL_F_CONFIG))
		return fail(vu, "%s: the CONFIG protocol feature was not negotiated", what);
	if (len < 1 || len > VHOST_USER_MAX_CONFIG || offset > VHOST_USER_MAX_CONFIG - len)
		return fail(vu, "%s: %u bytes at %u are beyond the %u a config space may have",
			    what, len, offset, VHOST_USER_MAX_CONFIG);
	return 0;
}

int vhost_user_get_config(struct vhost_user *vu, unsigned offset, void *buf, unsigned len)
{
	if (config_checks(vu, "GET_CONFIG", offset, len) < 0)
		return -1;
	uint8_t p[PAYLOAD_MAX];
	uint32_t size = config_payload(p, offset, NULL, len);
	if (send_msg(vu, GET_CONFIG, 0, p, size, NULL, 0) < 0)
		return -1;
	int got = recv_reply(vu, GET_CONFIG, p, size, true);
	if (got < 0)
		return -1;
	if (got == 0)
		return fail(vu, "the back end refused GET_CONFIG of %u bytes at %u", len, offset);
	uint32_t words[3];
	memcpy(words, p, sizeof(words));
	if (words[0] != offset || words[1] != len)
		return broken(vu, "GET_CONFIG of %u bytes at %u: the reply says %u bytes at %u",
			      len, offset, words[1], words[0]);
	memcpy(buf, p + CONFIG_HDR_SIZE, len);
	return 0;
}

int vhost_user_set_config(struct vhost_user *vu, unsigned offset, const void *buf, unsigned len)
{
	if (config_checks(vu, "SET_CONFIG", offset, len) < 0)
		return -1;
	uint8_t p[PAYLOAD_MAX];
	uint32_t size = config_payload(p, offset, buf, len);
	return request(vu, SET_CONFIG, p, size, NULL, 0);
}

int vhost_user_reset(struct vhost_user *vu)
{
	if (has_protocol(vu, VHOST_USER_PROTOCOL_F_RESET_DEVICE))
		return request(vu, RESET_DEVICE, NULL, 0, NULL, 0);
	return request(vu, RESET_OWNER, NULL, 0, NULL, 0);
}

const char *vhost_user_error(const struct vhost_user *vu)
{
	return vu->error;
}

bool vhost_user_broken(const struct vhost_user *vu)
{
	return vu->broken;
}

void vhost_user_mark_broken(struct vhost_user *vu, const char *why)
{
	broken(vu, "%s", why);
}

int vhost_user_move_fd(struct vhost_user *vu, int lowest, int count)
{
	for (int fd = lowest; fd < lowest + count; fd++) {
		if (fd == vu->fd)
			return 0;
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue; /* taken */
		if (dup3(vu->fd, fd, O_CLOEXEC) < 0)
			return -1;
		close(vu->fd);
		vu->fd = fd;
		return 0;
	}
	errno = EMFILE;
	return -1;
}

int vhost_user_fd(const struct vhost_user *vu)
{
	return vu->fd;
}

void vhost_user_close(struct vhost_user *vu)
{
	if (!vu)
		return;
	close(vu->fd);
	free(vu);
}
