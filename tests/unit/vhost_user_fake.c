/* The unit tests' fake vhost-user back end (vhost_user_fake.h). */
#include "vhost_user_fake.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static bool read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (uint8_t *)buf + got, len - got);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

void fake_write_full(int fd, const void *buf, size_t len)
{
	cr_assert_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

void fake_put_reply(int fd, uint32_t req, uint32_t flags, uint32_t size, const void *payload,
		    size_t len, int attach)
{
	uint8_t buf[12 + 512];
	uint32_t hdr[3] = {req, flags, size};
	memcpy(buf, hdr, 12);
	if (len)
		memcpy(buf + 12, payload, len);
	struct iovec iov = {.iov_base = buf, .iov_len = 12 + len};
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (attach >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &attach, sizeof(int));
	}
	cr_assert_eq(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)(12 + len));
}

void fake_put_u64(int fd, uint32_t req, uint64_t v)
{
	fake_put_reply(fd, req, V1 | REPLY, 8, &v, 8, -1);
}

bool fake_take_msg(int fd, struct rec *m)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} ctl;
	uint32_t hdr[3];
	struct iovec iov = {.iov_base = hdr, .iov_len = 12};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.b,
			    .msg_controllen = sizeof(ctl.b)};
	ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return false;
	memset(m, 0, sizeof(*m));
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		unsigned k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(m->fds + m->nfds, CMSG_DATA(c), k * sizeof(int));
		m->nfds += k;
	}
	if (n < 12 && !read_full(fd, (uint8_t *)hdr + n, 12 - (size_t)n))
		return false;
	m->req = hdr[0];
	m->flags = hdr[1];
	m->size = hdr[2];
	return m->size <= sizeof(m->payload) && read_full(fd, m->payload, m->size);
}

static void *fake_run(void *opaque)
{
	struct fake *f = opaque;
	struct rec m;
	while (f->n < 64 && fake_take_msg(f->fd, &m)) {
		fake_lock(f);
		f->msgs[f->n++] = m;
		fake_unlock(f);
		uint32_t state[2];
		switch (m.req) {
		case GET_FEATURES:
			fake_put_u64(f->fd, m.req, f->features);
			continue;
		case GET_PROTOCOL_FEATURES:
			fake_put_u64(f->fd, m.req, f->protocol);
			continue;
		case GET_QUEUE_NUM:
			fake_put_u64(f->fd, m.req, f->queues);
			continue;
		case GET_VRING_BASE:
			memcpy(state, m.payload, 8);
			state[1] = f->vring_base;
			fake_put_reply(f->fd, m.req, V1 | REPLY, 8, state, 8, -1);
			continue;
		case GET_CONFIG: {
			uint32_t off, len;
			memcpy(&off, m.payload, 4);
			memcpy(&len, m.payload + 4, 4);
			if (off + len > sizeof(f->config)) {
				snprintf(f->bad, sizeof(f->bad), "GET_CONFIG %u at %u", len, off);
				return NULL;
			}
			memcpy(m.payload + 12, f->config + off, len);
			fake_put_reply(f->fd, m.req, V1 | REPLY, 12 + len, m.payload, 12 + len, -1);
			continue;
		}
		}
		if (m.flags & NEED_REPLY)
			fake_put_u64(f->fd, m.req, m.req == f->nack_req ? f->nack_status : 0);
	}
	return NULL;
}

struct vhost_user *fake_start(struct fake *f)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f->fd = sv[1];
	pthread_mutex_init(&f->lock, NULL);
	cr_assert_eq(pthread_create(&f->thread, NULL, fake_run, f), 0);
	struct vhost_user *vu = vhost_user_from_fd(sv[0], "fake");
	cr_assert(vu);
	return vu;
}

void fake_lock(struct fake *f)
{
	pthread_mutex_lock(&f->lock);
}

void fake_unlock(struct fake *f)
{
	pthread_mutex_unlock(&f->lock);
}

void fake_join(struct fake *f)
{
	pthread_join(f->thread, NULL);
	close(f->fd);
	cr_assert_str_empty(f->bad);
}

void fake_stop(struct fake *f, struct vhost_user *vu)
{
	vhost_user_close(vu);
	fake_join(f);
}

void fake_close_fds(struct fake *f)
{
	for (unsigned i = 0; i < f->n; i++)
		for (unsigned k = 0; k < f->msgs[i].nfds; k++)
			close(f->msgs[i].fds[k]);
}

uint64_t rec_u64(const struct rec *m, size_t off)
{
	uint64_t v;
	memcpy(&v, m->payload + off, 8);
	return v;
}

uint32_t rec_u32(const struct rec *m, size_t off)
{
	uint32_t v;
	memcpy(&v, m->payload + off, 4);
	return v;
}

const struct rec *fake_expect(struct fake *f, unsigned i, uint32_t req, uint32_t flags,
			      uint32_t size)
{
	cr_assert_lt(i, f->n, "message %u missing (only %u came)", i, f->n);
	const struct rec *m = &f->msgs[i];
	cr_assert_eq(m->req, req, "message %u: request %u, expected %u", i, m->req, req);
	cr_assert_eq(m->flags, flags, "message %u (%u): flags 0x%x, expected 0x%x", i, req,
		     m->flags, flags);
	cr_assert_eq(m->size, size, "message %u (%u): size %u, expected %u", i, req, m->size, size);
	if (req != SET_MEM_TABLE && req != SET_VRING_KICK && req != SET_VRING_CALL)
		cr_assert_eq(m->nfds, 0, "message %u (%u) carried descriptors", i, req);
	return m;
}

void assert_same_eventfd(int received, int ours)
{
	uint64_t v = 0x55;
	cr_assert_eq(write(received, &v, 8), 8);
	v = 0;
	cr_assert_eq(read(ours, &v, 8), 8);
	cr_assert_eq(v, 0x55);
}

void assert_same_file(int a, int b)
{
	struct stat sa, sb;
	cr_assert_eq(fstat(a, &sa), 0);
	cr_assert_eq(fstat(b, &sb), 0);
	cr_assert(sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino,
		  "descriptors %d and %d name different files", a, b);
}

unsigned fake_find(const struct fake *f, unsigned from, uint32_t req)
{
	unsigned i = from;
	while (i < f->n && f->msgs[i].req != req)
		i++;
	return i;
}
