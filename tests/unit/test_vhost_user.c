/* The vhost-user protocol client (devices/backends/vhost_user.c): against a fake back end in a
 * thread (every message it is sent checked: codes, flags, sizes, payloads, descriptors), against
 * hostile replies queued on a socketpair ahead of the request (each refused, the connection
 * broken for good, no descriptor leaked, no hang), and against Debian's real virtiofsd. The
 * fake and the spec's request codes, written there rather than taken from the client, are in
 * vhost_user_fake.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "devices/backends/vhost_user.h"
#include "vhost_user_fake.h"

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	cr_assert(d);
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

TestSuite(vhost_user, .timeout = 20);

#define MEM_SIZE (1u << 20)

Test(vhost_user, handshake_and_vring)
{
	struct fake f = {.features = F_VERSION_1 | F_PROTOCOL | 1,
			 .protocol = P_MQ | P_REPLY_ACK | P_CONFIG | P_SLAVE_REQ,
			 .queues = 2,
			 .vring_base = 1234};
	for (unsigned i = 0; i < sizeof(f.config); i++)
		f.config[i] = (uint8_t)(i * 7);
	struct vhost_user *vu = fake_start(&f);

	struct vhost_user_info info;
	cr_assert_eq(vhost_user_handshake(vu, ~0ull, &info), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(info.features, f.features);
	cr_assert_eq(info.protocol_features, P_MQ | P_REPLY_ACK | P_CONFIG);
	cr_assert_eq(info.queues, 2);
	cr_assert_eq(vhost_user_set_features(vu, F_VERSION_1), 0, "%s", vhost_user_error(vu));

	int memfd = memfd_create("guest", MFD_CLOEXEC);
	cr_assert_geq(memfd, 0);
	cr_assert_eq(ftruncate(memfd, MEM_SIZE), 0);
	uint8_t *mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	cr_assert_neq(mem, MAP_FAILED);
	uint64_t ua = (uint64_t)(uintptr_t)mem;
	struct vhost_user_region r = {.guest_addr = 0x100000,
				      .size = MEM_SIZE,
				      .user_addr = ua,
				      .mmap_offset = 0,
				      .fd = memfd};
	cr_assert_eq(vhost_user_set_mem_table(vu, &r, 1), 0, "%s", vhost_user_error(vu));

	int kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), call = eventfd(0, EFD_CLOEXEC);
	cr_assert(kick >= 0 && call >= 0);
	struct vhost_user_vring vr = {.index = 1,
				      .size = 256,
				      .desc_addr = ua + 0x1000,
				      .avail_addr = ua + 0x2000,
				      .used_addr = ua + 0x3000,
				      .base = 7,
				      .kick_fd = kick,
				      .call_fd = call};
	cr_assert_eq(vhost_user_setup_vring(vu, &vr), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(vhost_user_enable_vring(vu, 1, true), 0, "%s", vhost_user_error(vu));
	uint8_t cfg[8];
	cr_assert_eq(vhost_user_get_config(vu, 16, cfg, sizeof(cfg)), 0, "%s",
		     vhost_user_error(vu));
	cr_assert_arr_eq(cfg, f.config + 16, sizeof(cfg));
	cr_assert_eq(vhost_user_set_config(vu, 4, "abcd", 4), 0, "%s", vhost_user_error(vu));
	uint16_t base = 0;
	cr_assert_eq(vhost_user_get_vring_base(vu, 1, &base), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(base, 1234);
	cr_assert_eq(vhost_user_reset(vu), 0, "%s", vhost_user_error(vu));
	cr_assert_not(vhost_user_broken(vu));
	fake_stop(&f, vu);

	unsigned i = 0;
	const uint32_t ack = V1 | NEED_REPLY;
	fake_expect(&f, i++, GET_FEATURES, V1, 0);
	fake_expect(&f, i++, GET_PROTOCOL_FEATURES, V1, 0);
	const struct rec *m = fake_expect(&f, i++, SET_PROTOCOL_FEATURES, V1, 8);
	cr_assert_eq(rec_u64(m, 0), P_MQ | P_REPLY_ACK | P_CONFIG, "only what both sides know");
	fake_expect(&f, i++, SET_OWNER, ack, 0);
	fake_expect(&f, i++, GET_QUEUE_NUM, V1, 0);
	m = fake_expect(&f, i++, SET_FEATURES, ack, 8);
	cr_assert_eq(rec_u64(m, 0), F_VERSION_1 | F_PROTOCOL);

	m = fake_expect(&f, i++, SET_MEM_TABLE, ack, 8 + 32);
	cr_assert_eq(rec_u32(m, 0), 1, "regions");
	cr_assert_eq(rec_u64(m, 8), 0x100000);
	cr_assert_eq(rec_u64(m, 16), MEM_SIZE);
	cr_assert_eq(rec_u64(m, 24), ua);
	cr_assert_eq(rec_u64(m, 32), 0);
	cr_assert_eq(m->nfds, 1);
	struct stat a, b;
	cr_assert_eq(fstat(m->fds[0], &a), 0);
	cr_assert_eq(fstat(memfd, &b), 0);
	cr_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev, "the memfd itself arrived");

	m = fake_expect(&f, i++, SET_VRING_NUM, ack, 8);
	cr_assert(rec_u32(m, 0) == 1 && rec_u32(m, 4) == 256);
	m = fake_expect(&f, i++, SET_VRING_BASE, ack, 8);
	cr_assert(rec_u32(m, 0) == 1 && rec_u32(m, 4) == 7);
	m = fake_expect(&f, i++, SET_VRING_ADDR, ack, 40);
	cr_assert(rec_u32(m, 0) == 1 && rec_u32(m, 4) == 0, "index and flags");
	cr_assert_eq(rec_u64(m, 8), ua + 0x1000, "descriptor table");
	cr_assert_eq(rec_u64(m, 16), ua + 0x3000, "used ring (before the available one)");
	cr_assert_eq(rec_u64(m, 24), ua + 0x2000, "available ring");
	cr_assert_eq(rec_u64(m, 32), 0, "log");
	m = fake_expect(&f, i++, SET_VRING_CALL, ack, 8);
	cr_assert_eq(rec_u64(m, 0), 1, "index, no NOFD bit");
	cr_assert_eq(m->nfds, 1);
	assert_same_eventfd(m->fds[0], call);
	m = fake_expect(&f, i++, SET_VRING_KICK, ack, 8);
	cr_assert_eq(rec_u64(m, 0), 1);
	cr_assert_eq(m->nfds, 1);
	assert_same_eventfd(m->fds[0], kick);
	m = fake_expect(&f, i++, SET_VRING_ENABLE, ack, 8);
	cr_assert(rec_u32(m, 0) == 1 && rec_u32(m, 4) == 1);
	m = fake_expect(&f, i++, GET_CONFIG, V1, 12 + 8);
	cr_assert(rec_u32(m, 0) == 16 && rec_u32(m, 4) == 8 && rec_u32(m, 8) == 0);
	m = fake_expect(&f, i++, SET_CONFIG, ack, 12 + 4);
	cr_assert(rec_u32(m, 0) == 4 && rec_u32(m, 4) == 4 && rec_u32(m, 8) == 0);
	cr_assert_arr_eq(m->payload + 12, "abcd", 4);
	m = fake_expect(&f, i++, GET_VRING_BASE, V1, 8);
	cr_assert(rec_u32(m, 0) == 1 && rec_u32(m, 4) == 0);
	fake_expect(&f, i++, RESET_OWNER, ack, 0);
	cr_assert_eq(f.n, i, "%u messages, expected %u", f.n, i);

	fake_close_fds(&f);
	munmap(mem, MEM_SIZE);
	close(memfd);
	close(kick);
	close(call);
}

/* A back end without protocol features: no GET_PROTOCOL_FEATURES, no acknowledgements, rings
 * enabled from the start, no config; a vring without descriptors gets the NOFD bit. */
Test(vhost_user, no_protocol_features)
{
	struct fake f = {.features = F_VERSION_1, .vring_base = 9};
	struct vhost_user *vu = fake_start(&f);
	struct vhost_user_info info;
	cr_assert_eq(vhost_user_handshake(vu, ~0ull, &info), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(info.protocol_features, 0);
	cr_assert_eq(info.queues, 0);
	cr_assert_eq(vhost_user_set_features(vu, F_VERSION_1), 0);
	struct vhost_user_vring vr = {.index = 0,
				      .size = 1024,
				      .desc_addr = 0x1000,
				      .avail_addr = 0x5000,
				      .used_addr = 0x6000,
				      .kick_fd = -1,
				      .call_fd = -1};
	cr_assert_eq(vhost_user_setup_vring(vu, &vr), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(vhost_user_enable_vring(vu, 0, true), 0, "enabled already: nothing sent");
	cr_assert_eq(vhost_user_enable_vring(vu, 0, false), -1);
	uint8_t cfg[4];
	cr_assert_eq(vhost_user_get_config(vu, 0, cfg, 4), -1);
	cr_assert(strstr(vhost_user_error(vu), "CONFIG protocol feature was not negotiated"), "%s",
		  vhost_user_error(vu));
	cr_assert_not(vhost_user_broken(vu), "a refused call leaves the connection usable");
	uint16_t base;
	cr_assert_eq(vhost_user_get_vring_base(vu, 0, &base), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(base, 9);
	fake_stop(&f, vu);

	unsigned i = 0;
	fake_expect(&f, i++, GET_FEATURES, V1, 0);
	fake_expect(&f, i++, SET_OWNER, V1, 0);
	const struct rec *m = fake_expect(&f, i++, SET_FEATURES, V1, 8);
	cr_assert_eq(rec_u64(m, 0), F_VERSION_1, "no protocol feature bit when none was offered");
	fake_expect(&f, i++, SET_VRING_NUM, V1, 8);
	fake_expect(&f, i++, SET_VRING_BASE, V1, 8);
	fake_expect(&f, i++, SET_VRING_ADDR, V1, 40);
	m = fake_expect(&f, i++, SET_VRING_CALL, V1, 8);
	cr_assert(rec_u64(m, 0) == 0x100 && m->nfds == 0, "NOFD and no descriptor");
	m = fake_expect(&f, i++, SET_VRING_KICK, V1, 8);
	cr_assert(rec_u64(m, 0) == 0x100 && m->nfds == 0, "NOFD and no descriptor");
	fake_expect(&f, i++, GET_VRING_BASE, V1, 8);
	cr_assert_eq(f.n, i);
}

/* REPLY_ACK: a nonzero acknowledgement is the back end's refusal of that request: an error,
 * and the connection goes on (acknowledged with 0 again). */
Test(vhost_user, reply_ack_nonzero_refused)
{
	struct fake f = {.features = F_VERSION_1 | F_PROTOCOL,
			 .protocol = P_REPLY_ACK,
			 .nack_req = SET_VRING_NUM,
			 .nack_status = 22};
	struct vhost_user *vu = fake_start(&f);
	struct vhost_user_info info;
	cr_assert_eq(vhost_user_handshake(vu, P_REPLY_ACK, &info), 0, "%s", vhost_user_error(vu));
	struct vhost_user_vring vr = {.index = 0, .size = 64, .kick_fd = -1, .call_fd = -1};
	cr_assert_eq(vhost_user_setup_vring(vu, &vr), -1);
	cr_assert_str_eq(vhost_user_error(vu),
			 "vhost-user fake: the back end refused SET_VRING_NUM (status 22)");
	cr_assert_not(vhost_user_broken(vu));
	cr_assert_eq(vhost_user_enable_vring(vu, 0, true), 0, "%s", vhost_user_error(vu));
	fake_stop(&f, vu);
	cr_assert_eq(f.msgs[f.n - 1].req, SET_VRING_ENABLE);
	cr_assert_eq(f.msgs[f.n - 1].flags, V1 | NEED_REPLY);
}

/* Arguments the client refuses before sending anything. */
Test(vhost_user, bad_arguments)
{
	struct fake f = {.features = F_VERSION_1};
	struct vhost_user *vu = fake_start(&f);
	struct vhost_user_vring vr = {.index = 0, .size = 100, .kick_fd = -1, .call_fd = -1};
	cr_assert_eq(vhost_user_setup_vring(vu, &vr), -1);
	cr_assert(strstr(vhost_user_error(vu), "size 100 is not a power of two"));
	vr.size = 65536;
	cr_assert_eq(vhost_user_setup_vring(vu, &vr), -1);
	vr.size = 256;
	vr.index = 256;
	cr_assert_eq(vhost_user_setup_vring(vu, &vr), -1);
	struct vhost_user_region r[9] = {{.size = 4096, .fd = 0}};
	cr_assert_eq(vhost_user_set_mem_table(vu, r, 0), -1);
	cr_assert_eq(vhost_user_set_mem_table(vu, r, 9), -1);
	r[0].fd = -1;
	cr_assert_eq(vhost_user_set_mem_table(vu, r, 1), -1);
	cr_assert_not(vhost_user_broken(vu));
	fake_stop(&f, vu);
	cr_assert_eq(f.n, 0, "nothing was sent");
}

/* ---- hostile replies, queued on the back end's end before the client asks */

static struct vhost_user *pair(int *be)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	*be = sv[1];
	struct vhost_user *vu = vhost_user_from_fd(sv[0], "hostile");
	cr_assert(vu);
	vhost_user_set_timeout(vu, 1000);
	return vu;
}

/* Nothing more is waiting on be (the client sent nothing since). */
static void assert_quiet(int be)
{
	char c;
	cr_assert_eq(recv(be, &c, 1, MSG_DONTWAIT), -1, "the client sent more");
	cr_assert_eq(errno, EAGAIN);
}

static void drain(int be)
{
	char buf[4096];
	while (recv(be, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* The call failed with a reason containing want, the connection is broken, and the next call
 * fails at once with the same reason without sending anything, even with a good reply queued. */
static void assert_broken(struct vhost_user *vu, int be, int rc, const char *want)
{
	cr_assert_eq(rc, -1);
	cr_assert(vhost_user_broken(vu));
	const char *err = vhost_user_error(vu);
	cr_assert(strstr(err, want), "error '%s' lacks '%s'", err, want);
	cr_assert_null(strchr(err, '\n'), "one line");
	char first[512];
	snprintf(first, sizeof(first), "%s", err);
	if (be >= 0) {
		drain(be);
		fake_put_u64(be, GET_FEATURES, 0);
	}
	struct vhost_user_info info;
	uint64_t t0 = clock_monotonic_ns();
	cr_assert_eq(vhost_user_handshake(vu, 0, &info), -1);
	cr_assert_eq(vhost_user_set_features(vu, 0), -1);
	uint16_t base;
	cr_assert_eq(vhost_user_get_vring_base(vu, 0, &base), -1);
	cr_assert_lt(clock_monotonic_ns() - t0, 50000000ull, "fails fast");
	cr_assert_str_eq(vhost_user_error(vu), first, "the same reason");
	if (be >= 0)
		assert_quiet(be);
}

static int features_hostile(uint32_t req, uint32_t flags, uint32_t size, const void *payload,
			    size_t len, int attach, struct vhost_user *vu, int be)
{
	fake_put_reply(be, req, flags, size, payload, len, attach);
	struct vhost_user_info info;
	return vhost_user_handshake(vu, ~0ull, &info);
}

Test(vhost_user, reply_wrong_code)
{
	int be;
	struct vhost_user *vu = pair(&be);
	uint64_t v = F_VERSION_1;
	int rc = features_hostile(SET_FEATURES, V1 | REPLY, 8, &v, 8, -1, vu, be);
	assert_broken(vu, be, rc, "the reply to GET_FEATURES has request code 2");
	vhost_user_close(vu);
	close(be);
}

Test(vhost_user, reply_bit_missing)
{
	int be;
	struct vhost_user *vu = pair(&be);
	uint64_t v = F_VERSION_1;
	int rc = features_hostile(GET_FEATURES, V1, 8, &v, 8, -1, vu, be);
	assert_broken(vu, be, rc, "lacks the reply flag");
	vhost_user_close(vu);
	close(be);
}

Test(vhost_user, reply_wrong_version)
{
	int be;
	struct vhost_user *vu = pair(&be);
	uint64_t v = F_VERSION_1;
	int rc = features_hostile(GET_FEATURES, 0x2 | REPLY, 8, &v, 8, -1, vu, be);
	assert_broken(vu, be, rc, "has version 2, not 1");
	vhost_user_close(vu);
	close(be);
}

Test(vhost_user, reply_size_too_large)
{
	int be;
	struct vhost_user *vu = pair(&be);
	uint8_t big[64] = {0};
	int rc = features_hostile(GET_FEATURES, V1 | REPLY, 64, big, 64, -1, vu, be);
	assert_broken(vu, be, rc, "has a payload of 64 bytes, not 8");
	vhost_user_close(vu);
	close(be);
	/* and one announcing 4 GiB, of which nothing is read */
	vu = pair(&be);
	rc = features_hostile(GET_FEATURES, V1 | REPLY, 0xffffffffu, big, 8, -1, vu, be);
	assert_broken(vu, be, rc, "has a payload of 4294967295 bytes, not 8");
	vhost_user_close(vu);
	close(be);
}

Test(vhost_user, reply_size_too_small)
{
	int be;
	struct vhost_user *vu = pair(&be);
	uint32_t v = 1;
	int rc = features_hostile(GET_FEATURES, V1 | REPLY, 4, &v, 4, -1, vu, be);
	assert_broken(vu, be, rc, "has a payload of 4 bytes, not 8");
	vhost_user_close(vu);
	close(be);
}

/* A descriptor attached to a reply is closed (the process's descriptors are as many as before)
 * and the reply refused. */
Test(vhost_user, reply_with_fd)
{
	int be;
	struct vhost_user *vu = pair(&be);
	int efd = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(efd, 0);
	uint64_t v = F_VERSION_1;
	fake_put_reply(be, GET_FEATURES, V1 | REPLY, 8, &v, 8, efd);
	close(efd);
	int before = open_fds();
	struct vhost_user_info info;
	int rc = vhost_user_handshake(vu, ~0ull, &info);
	cr_assert_eq(open_fds(), before, "the descriptor that came was closed");
	assert_broken(vu, be, rc, "the reply to GET_FEATURES carried 1 file descriptor");
	vhost_user_close(vu);
	close(be);
}

/* The back end is gone before the request: sending fails with EPIPE, one error, and no SIGPIPE
 * ends the process (MSG_NOSIGNAL). */
Test(vhost_user, backend_gone)
{
	int be;
	struct vhost_user *vu = pair(&be);
	close(be);
	struct vhost_user_info info;
	int rc = vhost_user_handshake(vu, ~0ull, &info);
	assert_broken(vu, -1, rc, "sending GET_FEATURES: Broken pipe");
	vhost_user_close(vu);
}

/* The back end hangs up without replying, or in the middle of its reply. */
Test(vhost_user, backend_closes)
{
	int be;
	struct vhost_user *vu = pair(&be);
	shutdown(be, SHUT_WR); /* it still takes the request, and says no more */
	struct vhost_user_info info;
	int rc = vhost_user_handshake(vu, ~0ull, &info);
	assert_broken(vu, -1, rc,
		      "the back end closed the connection (awaiting the reply to GET_FEATURES)");
	vhost_user_close(vu);
	close(be);

	vu = pair(&be);
	uint32_t part[4] = {GET_FEATURES, V1 | REPLY, 8, 0}; /* and 4 of the payload's 8 bytes */
	fake_write_full(be, part, sizeof(part));
	shutdown(be, SHUT_WR);
	rc = vhost_user_handshake(vu, ~0ull, &info);
	assert_broken(vu, -1, rc,
		      "the back end closed the connection mid-reply (awaiting the reply to "
		      "GET_FEATURES)");
	vhost_user_close(vu);
	close(be);

	vu = pair(&be);
	fake_write_full(be, part, 6); /* half a header */
	shutdown(be, SHUT_WR);
	rc = vhost_user_handshake(vu, ~0ull, &info);
	assert_broken(vu, -1, rc, "closed the connection mid-reply");
	vhost_user_close(vu);
	close(be);
}

/* A back end that never answers: refused after the timeout, not waited for forever. */
Test(vhost_user, no_answer)
{
	int be;
	struct vhost_user *vu = pair(&be);
	vhost_user_set_timeout(vu, 200);
	uint64_t t0 = clock_monotonic_ns();
	struct vhost_user_info info;
	int rc = vhost_user_handshake(vu, ~0ull, &info);
	uint64_t took = clock_monotonic_ns() - t0;
	cr_assert_geq(took, 190000000ull, "waited %llu ns", (unsigned long long)took);
	cr_assert_lt(took, 1000000000ull, "waited %llu ns", (unsigned long long)took);
	assert_broken(vu, be, rc, "no reply to GET_FEATURES within 200 ms");
	vhost_user_close(vu);
	close(be);
}

/* The handshake up to what the test needs: protocol features offered as given, acked 0. */
static struct vhost_user *negotiated(int *be, uint64_t protocol)
{
	struct vhost_user *vu = pair(be);
	fake_put_u64(*be, GET_FEATURES, F_VERSION_1 | F_PROTOCOL);
	fake_put_u64(*be, GET_PROTOCOL_FEATURES, protocol);
	return vu;
}

Test(vhost_user, queue_count_out_of_range)
{
	static const uint64_t counts[] = {0, 257, 1ull << 40, ~0ull};
	for (unsigned i = 0; i < 4; i++) {
		int be;
		struct vhost_user *vu = negotiated(&be, P_MQ);
		fake_put_u64(be, GET_QUEUE_NUM, counts[i]);
		struct vhost_user_info info;
		int rc = vhost_user_handshake(vu, ~0ull, &info);
		char want[64];
		snprintf(want, sizeof(want), "GET_QUEUE_NUM: %llu queues (1 to 256",
			 (unsigned long long)counts[i]);
		assert_broken(vu, be, rc, want);
		vhost_user_close(vu);
		close(be);
	}
	int be;
	struct vhost_user *vu = negotiated(&be, P_MQ);
	fake_put_u64(be, GET_QUEUE_NUM, 256);
	struct vhost_user_info info;
	cr_assert_eq(vhost_user_handshake(vu, ~0ull, &info), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(info.queues, 256);
	vhost_user_close(vu);
	close(be);
}

/* A REPLY_ACK acknowledgement is a reply like any other: the same checks. */
Test(vhost_user, reply_ack_hostile)
{
	int be;
	struct vhost_user *vu = negotiated(&be, P_REPLY_ACK);
	fake_put_reply(be, SET_OWNER, V1 | REPLY, 4, "\0\0\0", 4, -1);
	struct vhost_user_info info;
	int rc = vhost_user_handshake(vu, ~0ull, &info);
	assert_broken(vu, be, rc, "the reply to SET_OWNER has a payload of 4 bytes, not 8");
	vhost_user_close(vu);
	close(be);
}

static struct vhost_user *with_config(int *be)
{
	struct vhost_user *vu = negotiated(be, P_CONFIG);
	struct vhost_user_info info;
	cr_assert_eq(vhost_user_handshake(vu, ~0ull, &info), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(info.protocol_features, P_CONFIG);
	drain(*be);
	return vu;
}

Test(vhost_user, config_wrong_length)
{
	int be;
	struct vhost_user *vu = with_config(&be);
	uint32_t cfg[4] = {0, 4, 0, 0xabcd};
	fake_put_reply(be, GET_CONFIG, V1 | REPLY, 16, cfg, 16, -1);
	uint8_t buf[8];
	int rc = vhost_user_get_config(vu, 0, buf, 8);
	assert_broken(vu, be, rc, "the reply to GET_CONFIG has a payload of 16 bytes, not 20");
	vhost_user_close(vu);
	close(be);

	/* the right size, but its own header names another length */
	vu = with_config(&be);
	uint32_t cfg2[5] = {0, 4, 0, 1, 2};
	fake_put_reply(be, GET_CONFIG, V1 | REPLY, 20, cfg2, 20, -1);
	rc = vhost_user_get_config(vu, 0, buf, 8);
	assert_broken(vu, be, rc, "GET_CONFIG of 8 bytes at 0: the reply says 4 bytes at 0");
	vhost_user_close(vu);
	close(be);

	/* no config at all: the spec's refusal, the connection goes on */
	vu = with_config(&be);
	fake_put_reply(be, GET_CONFIG, V1 | REPLY, 0, NULL, 0, -1);
	cr_assert_eq(vhost_user_get_config(vu, 0, buf, 8), -1);
	cr_assert(strstr(vhost_user_error(vu), "refused GET_CONFIG"));
	cr_assert_not(vhost_user_broken(vu));
	cr_assert_eq(vhost_user_get_config(vu, 0, buf, 257), -1, "beyond a config space");
	cr_assert_not(vhost_user_broken(vu));
	vhost_user_close(vu);
	close(be);
}

Test(vhost_user, vring_base_out_of_range)
{
	int be;
	struct vhost_user *vu = pair(&be);
	uint32_t state[2] = {0, 65536};
	fake_put_reply(be, GET_VRING_BASE, V1 | REPLY, 8, state, 8, -1);
	uint16_t base;
	int rc = vhost_user_get_vring_base(vu, 0, &base);
	assert_broken(vu, be, rc, "base 65536 is beyond 65535");
	vhost_user_close(vu);
	close(be);

	vu = pair(&be);
	uint32_t other[2] = {3, 5};
	fake_put_reply(be, GET_VRING_BASE, V1 | REPLY, 8, other, 8, -1);
	rc = vhost_user_get_vring_base(vu, 0, &base);
	assert_broken(vu, be, rc, "the reply is for vring 3");
	vhost_user_close(vu);
	close(be);
}

Test(vhost_user, connect_missing_socket)
{
	char err[256];
	uint64_t t0 = clock_monotonic_ns();
	struct vhost_user *vu =
	    vhost_user_connect("/nonexistent/vhost.sock", 100, err, sizeof(err));
	cr_assert_null(vu);
	cr_assert_geq(clock_monotonic_ns() - t0, 90000000ull, "waited for it");
	cr_assert_str_eq(err, "cannot connect to vhost-user socket /nonexistent/vhost.sock: No "
			      "such file or directory (waited for it)");
}

/* ---- Debian's virtiofsd (package qemu-system-common): the real back end */

static pid_t vfs_pid = -1;
static char vfs_dir[64];

/* Where distributions install virtiofsd (QEMU's C one, or the Rust one), then PATH. */
static bool find_virtiofsd(char *out, size_t len)
{
	static const char *const known[] = {"/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd",
					    "/usr/lib/virtiofsd"};
	for (unsigned i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (access(known[i], X_OK) == 0) {
			snprintf(out, len, "%s", known[i]);
			return true;
		}
	const char *path = getenv("PATH");
	char *dirs = strdup(path ? path : "");
	bool found = false;
	for (char *save, *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/virtiofsd", d);
		found = access(out, X_OK) == 0;
	}
	free(dirs);
	return found;
}

/* Whether /run/virtiofsd was there before the test (virtiofsd creates it otherwise). */
static bool vfs_run_dir_existed;

/* Whatever happens to the test: virtiofsd killed and reaped, its directories gone. */
static void vfs_fini(void)
{
	if (vfs_pid > 0) {
		kill(vfs_pid, SIGKILL);
		waitpid(vfs_pid, NULL, 0);
		vfs_pid = -1;
	}
	if (vfs_dir[0]) {
		/* The pid file QEMU's virtiofsd leaves for each socket path (its lock against a
		 * second one on the same path), named after the path. */
		char pidfile[128];
		int n =
		    snprintf(pidfile, sizeof(pidfile), "/run/virtiofsd/%s/vhost.sock.pid", vfs_dir);
		for (int i = (int)strlen("/run/virtiofsd/"); i < n; i++)
			if (pidfile[i] == '/')
				pidfile[i] = '.';
		unlink(pidfile);
		if (!vfs_run_dir_existed)
			rmdir(
			    "/run/virtiofsd"); /* virtiofsd made it for its pid files; empty now */
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", vfs_dir);
		if (system(cmd) != 0)
			cr_log_warn("could not remove %s", vfs_dir);
		vfs_dir[0] = 0;
	}
}

static bool vfs_alive(void)
{
	int status;
	return waitpid(vfs_pid, &status, WNOHANG) == 0;
}

static const char *vfs_log(void)
{
	static char buf[2048];
	char path[96];
	snprintf(path, sizeof(path), "%s/log", vfs_dir);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

/* The hiprio queue (index 0) of a virtio-fs device set up in virtiofsd and stopped again, the
 * way the device kind will: handshake, features, a memfd as guest memory, the vring with
 * eventfds, enabled, kicked, GET_VRING_BASE, close; virtiofsd lives through it and exits when
 * the session ends. */
Test(vhost_user, virtiofsd, .fini = vfs_fini)
{
	char bin[256];
	if (!find_virtiofsd(bin, sizeof(bin)))
		cr_skip_test("no virtiofsd (Debian: apt-get install qemu-system-common)");
	if (geteuid() != 0)
		cr_skip_test("virtiofsd needs root (it chroots into the shared directory)");
	vfs_run_dir_existed = access("/run/virtiofsd", F_OK) == 0;
	snprintf(vfs_dir, sizeof(vfs_dir), "/tmp/minivmm-vfs.XXXXXX");
	cr_assert(mkdtemp(vfs_dir));
	char share[96], sock[96], logpath[96], sockarg[128], srcarg[128];
	snprintf(share, sizeof(share), "%s/share", vfs_dir);
	snprintf(sock, sizeof(sock), "%s/vhost.sock", vfs_dir);
	snprintf(logpath, sizeof(logpath), "%s/log", vfs_dir);
	snprintf(sockarg, sizeof(sockarg), "--socket-path=%s", sock);
	snprintf(srcarg, sizeof(srcarg), "source=%s", share);
	cr_assert_eq(mkdir(share, 0755), 0);

	pid_t parent = getpid();
	vfs_pid = fork();
	cr_assert_geq(vfs_pid, 0);
	if (vfs_pid == 0) {
		/* Killed with the test's process, whatever ends it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		int log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		execl(bin, bin, sockarg, "-o", srcarg, "-o", "cache=none", "-o", "sandbox=chroot",
		      (char *)NULL);
		_exit(127);
	}

	char err[256];
	struct vhost_user *vu = vhost_user_connect(sock, 5000, err, sizeof(err));
	cr_assert(vu, "%s; virtiofsd said: %s", err, vfs_log());
	struct vhost_user_info info;
	cr_assert_eq(vhost_user_handshake(vu, ~0ull, &info), 0, "%s", vhost_user_error(vu));
	cr_log_info("virtiofsd: features 0x%llx, protocol features 0x%llx, %u queues",
		    (unsigned long long)info.features, (unsigned long long)info.protocol_features,
		    info.queues);
	cr_assert(info.features & F_VERSION_1, "features 0x%llx",
		  (unsigned long long)info.features);
	cr_assert(info.features & F_PROTOCOL);
	cr_assert(info.protocol_features & P_REPLY_ACK, "acknowledged from here on");
	if (info.protocol_features & P_MQ)
		cr_assert_geq(info.queues, 2, "hiprio and one request queue at least");
	cr_assert_eq(vhost_user_set_features(vu, F_VERSION_1), 0, "%s", vhost_user_error(vu));

	const size_t size = 4u << 20;
	int memfd = memfd_create("guest", MFD_CLOEXEC);
	cr_assert_geq(memfd, 0);
	cr_assert_eq(ftruncate(memfd, (off_t)size), 0);
	uint8_t *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	cr_assert_neq(mem, MAP_FAILED);
	uint64_t ua = (uint64_t)(uintptr_t)mem;
	struct vhost_user_region r = {
	    .guest_addr = 0, .size = size, .user_addr = ua, .mmap_offset = 0, .fd = memfd};
	cr_assert_eq(vhost_user_set_mem_table(vu, &r, 1), 0, "%s", vhost_user_error(vu));

	int kick = eventfd(0, EFD_CLOEXEC), call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cr_assert(kick >= 0 && call >= 0);
	struct vhost_user_vring vr = {.index = 0,
				      .size = 128,
				      .desc_addr = ua,
				      .avail_addr = ua + 0x1000,
				      .used_addr = ua + 0x2000,
				      .base = 0,
				      .kick_fd = kick,
				      .call_fd = call};
	cr_assert_eq(vhost_user_setup_vring(vu, &vr), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(vhost_user_enable_vring(vu, 0, true), 0, "%s", vhost_user_error(vu));
	uint64_t one = 1; /* an empty ring kicked: nothing to do, nothing to break */
	cr_assert_eq(write(kick, &one, 8), 8);
	cr_assert(vfs_alive(), "virtiofsd died: %s", vfs_log());
	uint16_t base = 0xffff;
	cr_assert_eq(vhost_user_get_vring_base(vu, 0, &base), 0, "%s", vhost_user_error(vu));
	cr_assert_eq(base, 0, "nothing was made available");
	cr_assert(vfs_alive(), "virtiofsd died: %s", vfs_log());
	cr_assert_not(vhost_user_broken(vu));
	vhost_user_close(vu);

	/* The session is over: virtiofsd ends on its own. */
	int status = 0;
	pid_t got = 0;
	for (int i = 0; i < 500 && got == 0; i++) {
		got = waitpid(vfs_pid, &status, WNOHANG);
		if (got == 0) {
			struct timespec t = {.tv_nsec = 10000000};
			nanosleep(&t, NULL);
		}
	}
	cr_assert_eq(got, vfs_pid, "virtiofsd still runs 5 s after the session ended");
	vfs_pid = -1;
	cr_log_info("virtiofsd exited with status 0x%x; it said: %s", status, vfs_log());
	munmap(mem, size);
	close(memfd);
	close(kick);
	close(call);
}
