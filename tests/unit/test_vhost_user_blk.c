/* vhost-user-blk (devices/virtio/vhost_user_blk.c and --disk vhost-user=, vmm/kinds/): against a
 * small fake back end of this file's own (a thread serving the handshake, GET_CONFIG and
 * acknowledgements over a socketpair or a listening socket), what the guest is offered (the
 * config space as the back end gave it, the blk feature bits masked, the queue count capped),
 * the back ends refused and the command lines refused; then against Debian's real
 * qemu-storage-daemon: the handshake, the capacity of the image it serves, and requests written
 * into shared guest memory, served by it and seen in the image. The message codes are spelled
 * out here from the spec, not taken from the client. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/byteorder.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"
#include "devices/backends/vhost_user.h"
#include "devices/virtio/vhost_user_blk.h"
#include "devices/virtio/virtio.h"
#include "vmm/cli/cli.h"
#include "vmm/kinds/device_registry.h"
#include "vmm/kinds/kinds.h"
#include "vmm/kvm/vm.h"
#include "vmm/sandbox/seccomp_roles.h"
#include "vmm/snapshot/snapshot.h"

enum {
	GET_FEATURES = 1,
	GET_PROTOCOL_FEATURES = 15,
	GET_QUEUE_NUM = 17,
	GET_CONFIG = 24,
};

#define V1	   0x1u
#define REPLY	   0x4u
#define NEED_REPLY 0x8u

#define F_VERSION_1 (1ull << 32)
#define F_PROTOCOL  (1ull << 30)
#define F_INDIRECT  (1ull << 28)
#define F_EVENT_IDX (1ull << 29)
#define F_PACKED    (1ull << 34)
#define P_MQ	    (1ull << 0)
#define P_REPLY_ACK (1ull << 3)
#define P_CONFIG    (1ull << 9)

/* virtio-blk's feature bits (virtio 1.2, 5.2.3). */
#define B_SIZE_MAX     (1ull << 1)
#define B_SEG_MAX      (1ull << 2)
#define B_GEOMETRY     (1ull << 4)
#define B_RO	       (1ull << 5)
#define B_BLK_SIZE     (1ull << 6)
#define B_FLUSH	       (1ull << 9)
#define B_TOPOLOGY     (1ull << 10)
#define B_CONFIG_WCE   (1ull << 11)
#define B_MQ	       (1ull << 12)
#define B_DISCARD      (1ull << 13)
#define B_WRITE_ZEROES (1ull << 14)
#define B_SECURE_ERASE (1ull << 16)
#define B_ZONED	       (1ull << 17)

#define CFG_NUM_QUEUES 34
#define CFG_LEN	       60

/* ---- the fake back end ---- */

struct fake {
	int fd, listen_fd; /* listen_fd >= 0: accept one connection on it first */
	pthread_t thread;
	uint64_t features, protocol, queues;
	uint8_t config[256];
	bool refuse_config;
	uint32_t config_off, config_len; /* what GET_CONFIG asked */
	unsigned config_reads;
};

static bool read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = recv(fd, (uint8_t *)buf + got, len - got, MSG_CMSG_CLOEXEC);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

static void reply(int fd, uint32_t req, const void *payload, uint32_t len)
{
	uint8_t buf[12 + 256 + 12];
	uint32_t hdr[3] = {req, V1 | REPLY, len};
	memcpy(buf, hdr, 12);
	memcpy(buf + 12, payload, len);
	cr_assert_eq(send(fd, buf, 12 + len, MSG_NOSIGNAL), (ssize_t)(12 + len));
}

static void *fake_run(void *opaque)
{
	struct fake *f = opaque;
	if (f->listen_fd >= 0) {
		f->fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (f->fd < 0)
			return NULL;
	}
	uint32_t hdr[3];
	uint8_t p[512];
	/* Descriptors (SET_MEM_TABLE's, a vring's) are not looked at: none comes before the
	 * device is started, which these tests do not do with the fake. */
	while (read_full(f->fd, hdr, 12) && hdr[2] <= sizeof(p) && read_full(f->fd, p, hdr[2])) {
		uint64_t v;
		switch (hdr[0]) {
		case GET_FEATURES:
			reply(f->fd, hdr[0], &f->features, 8);
			continue;
		case GET_PROTOCOL_FEATURES:
			reply(f->fd, hdr[0], &f->protocol, 8);
			continue;
		case GET_QUEUE_NUM:
			reply(f->fd, hdr[0], &f->queues, 8);
			continue;
		case GET_CONFIG:
			memcpy(&f->config_off, p, 4);
			memcpy(&f->config_len, p + 4, 4);
			f->config_reads++;
			if (f->refuse_config || f->config_off + f->config_len > sizeof(f->config)) {
				reply(f->fd, hdr[0], p, 0);
				continue;
			}
			memcpy(p + 12, f->config + f->config_off, f->config_len);
			reply(f->fd, hdr[0], p, 12 + f->config_len);
			continue;
		}
		v = 0;
		if (hdr[1] & NEED_REPLY)
			reply(f->fd, hdr[0], &v, 8);
	}
	return NULL;
}

/* A back end offering every blk bit and more, with a recognisable config space. */
static void fake_defaults(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->fd = f->listen_fd = -1;
	f->features = F_VERSION_1 | F_PROTOCOL | F_INDIRECT | F_EVENT_IDX | F_PACKED | 0xffffffull;
	f->protocol = P_MQ | P_REPLY_ACK | P_CONFIG;
	f->queues = 4;
	for (unsigned i = 0; i < sizeof(f->config); i++)
		f->config[i] = (uint8_t)(i * 7 + 1);
	put_le16(f->config + CFG_NUM_QUEUES, 4);
}

static struct vhost_user *fake_start(struct fake *f, struct vhost_user_info *info)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f->fd = sv[1];
	cr_assert_eq(pthread_create(&f->thread, NULL, fake_run, f), 0);
	struct vhost_user *vu = vhost_user_from_fd(sv[0], "fake");
	cr_assert(vu);
	cr_assert_eq(vhost_user_handshake(vu, VHOST_USER_PROTOCOL_KNOWN, info), 0, "%s",
		     vhost_user_error(vu));
	return vu;
}

static void fake_stop(struct fake *f, struct vhost_user *vu)
{
	vhost_user_close(vu);
	pthread_join(f->thread, NULL);
	if (f->fd >= 0)
		close(f->fd);
	if (f->listen_fd >= 0)
		close(f->listen_fd);
}

/* Probe a fake configured by the test: 0 or -1, err set. */
static int probe(struct fake *f, struct vhost_user_blk_backend *be, char *err, size_t errlen)
{
	struct vhost_user_info info;
	struct vhost_user *vu = fake_start(f, &info);
	err[0] = '\0';
	int rc = vhost_user_blk_probe(vu, &info, be, err, errlen);
	fake_stop(f, vu);
	return rc;
}

/* ---- the model ---- */

static struct guest_mem mem;
static struct event_loop loop;
static struct virtio_dev dev;
static char err[512];

static void setup(void)
{
	cr_assert_eq(guest_mem_init(&mem, 16u << 20, false, true), 0);
	cr_assert_eq(event_loop_init(&loop), 0);
	memset(&dev, 0, sizeof(dev));
	err[0] = '\0';
}

static void teardown(void)
{
	event_loop_destroy(&loop);
	guest_mem_destroy(&mem);
}

TestSuite(vhost_user_blk, .init = setup, .fini = teardown, .timeout = 20);

/* What the guest is offered: the back end's blk bits of those a guest may use (not CONFIG_WCE,
 * secure erase, zoned, or the bits no driver knows), the ring features and VERSION_1; never the
 * protocol bit or packed rings. Its config space is the back end's, read once, 60 bytes. */
Test(vhost_user_blk, offers_the_back_ends_blk_features_and_config)
{
	struct fake f;
	fake_defaults(&f);
	struct vhost_user_info info;
	struct vhost_user *vu = fake_start(&f, &info);
	struct vhost_user_blk_backend be;
	cr_assert_eq(vhost_user_blk_probe(vu, &info, &be, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.config_reads, 1);
	cr_assert_eq(f.config_off, 0);
	cr_assert_eq(f.config_len, CFG_LEN);
	const uint64_t blk = B_SIZE_MAX | B_SEG_MAX | B_GEOMETRY | B_RO | B_BLK_SIZE | B_FLUSH |
			     B_TOPOLOGY | B_MQ | B_DISCARD | B_WRITE_ZEROES;
	cr_assert_eq(be.features, blk | F_INDIRECT | F_EVENT_IDX | F_VERSION_1, "0x%llx",
		     (unsigned long long)be.features);
	cr_assert_not(be.features & (B_CONFIG_WCE | B_SECURE_ERASE | B_ZONED));
	cr_assert_eq(be.queues, 4);

	struct vhost_user_blk *b =
	    vhost_user_blk_create(&dev, vu, &be, &mem, &loop, "virtio-blk0", err, sizeof(err));
	cr_assert(b, "%s", err);
	cr_assert_eq(dev.ops->device_id, VIRTIO_ID_BLOCK);
	cr_assert_eq(dev.nr_queues, 4);
	cr_assert_eq(dev.device_features, be.features);
	cr_assert(dev.external_queues);
	uint8_t cfg[CFG_LEN + 4];
	memset(cfg, 0xee, sizeof(cfg));
	virtio_dev_config_access(&dev, 0, cfg, CFG_LEN, false);
	cr_assert_eq(memcmp(cfg, f.config, CFG_LEN), 0, "the config space is not the back end's");
	cr_assert_eq(vhost_user_blk_capacity(b), get_le64(f.config));
	/* Read-only: a driver's write changes nothing (CONFIG_WCE is not offered). */
	uint8_t wce = 0x5a;
	virtio_dev_config_access(&dev, 32, &wce, 1, true);
	virtio_dev_config_access(&dev, 32, cfg, 1, false);
	cr_assert_eq(cfg[0], f.config[32]);
	cr_assert_eq(f.config_reads, 1, "the config was read again");
	vhost_user_blk_destroy(b); /* closes the connection: the fake ends */
	pthread_join(f.thread, NULL);
	close(f.fd);
}

/* The number of queues: num_queues in the config with MQ, capped at what GET_QUEUE_NUM said
 * and at VIRTIO_MAX_QUEUES (the config the guest reads says the same); one without MQ, or
 * without the MQ protocol feature (a back end then serves one ring). */
Test(vhost_user_blk, queue_count)
{
	const struct {
		bool mq_feature, mq_protocol;
		uint16_t num_queues;
		uint64_t queue_num;
		int expect;
	} cases[] = {
	    {true, true, 4, 4, 4},  {true, true, 8, 3, 3},  {true, true, 40, 64, VIRTIO_MAX_QUEUES},
	    {true, false, 4, 0, 1}, {false, true, 4, 4, 1}, {true, true, 1, 1, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f;
		fake_defaults(&f);
		if (!cases[i].mq_feature)
			f.features &= ~B_MQ;
		if (!cases[i].mq_protocol)
			f.protocol &= ~P_MQ;
		f.queues = cases[i].queue_num;
		put_le16(f.config + CFG_NUM_QUEUES, cases[i].num_queues);
		struct vhost_user_blk_backend be;
		cr_assert_eq(probe(&f, &be, err, sizeof(err)), 0, "case %zu: %s", i, err);
		cr_assert_eq(be.queues, cases[i].expect, "case %zu: %d queues", i, be.queues);
		if (cases[i].mq_feature)
			cr_assert_eq(get_le16(be.config + CFG_NUM_QUEUES), cases[i].expect,
				     "case %zu: the guest reads num_queues %u", i,
				     get_le16(be.config + CFG_NUM_QUEUES));
	}
}

/* Back ends a virtio-blk cannot be built on, each refused with its reason. */
Test(vhost_user_blk, refused_back_ends)
{
	struct fake f;
	struct vhost_user_blk_backend be;

	fake_defaults(&f);
	f.features &= ~F_VERSION_1;
	cr_assert_eq(probe(&f, &be, err, sizeof(err)), -1);
	cr_assert(strstr(err, "does not offer VIRTIO_F_VERSION_1"), "%s", err);

	fake_defaults(&f);
	f.protocol &= ~P_CONFIG;
	cr_assert_eq(probe(&f, &be, err, sizeof(err)), -1);
	cr_assert(strstr(err, "does not offer the CONFIG protocol feature"), "%s", err);
	cr_assert_eq(f.config_reads, 0);

	fake_defaults(&f);
	f.refuse_config = true;
	cr_assert_eq(probe(&f, &be, err, sizeof(err)), -1);
	cr_assert(
	    strstr(err, "GET_CONFIG: vhost-user fake: the back end refused GET_CONFIG of 60 bytes"),
	    "%s", err);

	fake_defaults(&f);
	put_le16(f.config + CFG_NUM_QUEUES, 0);
	cr_assert_eq(probe(&f, &be, err, sizeof(err)), -1);
	cr_assert(strstr(err, "VIRTIO_BLK_F_MQ with num_queues 0"), "%s", err);

	/* A queue count out of range never reaches virtio_dev_init. */
	memset(&be, 0, sizeof(be));
	be.info.features = F_VERSION_1;
	be.queues = VIRTIO_MAX_QUEUES + 1;
	cr_assert_null(vhost_user_blk_create(&dev, NULL, &be, &mem, &loop, "b", err, sizeof(err)));
	cr_assert(strstr(err, "not 1 to"), "%s", err);
}

/* ---- --disk vhost-user= ---- */

static char sock_dir[64], sock_path[96];

static void sock_fini(void)
{
	if (sock_path[0])
		unlink(sock_path);
	if (sock_dir[0])
		rmdir(sock_dir);
	sock_path[0] = sock_dir[0] = '\0';
}

/* The fake on a listening socket (the kind connects by path). */
static void fake_listen(struct fake *f)
{
	snprintf(sock_dir, sizeof(sock_dir), "/tmp/minivmm-vublk.XXXXXX");
	cr_assert(mkdtemp(sock_dir));
	snprintf(sock_path, sizeof(sock_path), "%s/sock", sock_dir);
	f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(f->listen_fd, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	cr_assert_eq(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(f->listen_fd, 1), 0);
	cr_assert_eq(pthread_create(&f->thread, NULL, fake_run, f), 0);
}

static int add_disk(struct vm_config *cfg, const char *spec)
{
	memset(cfg, 0, sizeof(*cfg));
	err[0] = '\0';
	return cli_add_device(cfg, "disk", spec, err, sizeof(err));
}

TestSuite(disk_vhost_user, .fini = sock_fini, .timeout = 20);

/* What goes with vhost-user= and what does not, before anything is connected to. */
Test(disk_vhost_user, options_refused_with_it)
{
	struct vm_config cfg;
	const char *refused[] = {"vhost-user=/x,path=/y", "vhost-user=/x,readonly=on",
				 "vhost-user=/x,readonly=off", "vhost-user=/x,cache=none",
				 "vhost-user=/x,serial=abc"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		cr_assert_eq(add_disk(&cfg, refused[i]), -1, "%s accepted", refused[i]);
		cr_assert(strstr(err, "--disk: vhost-user= takes no path=, readonly=, cache= or "
				      "serial="),
			  "%s: %s", refused[i], err);
		cr_assert_eq(cfg.nr_devices, 0);
	}
	cr_assert_eq(add_disk(&cfg, "cache=none"), -1);
	cr_assert(strstr(err, "--disk: path=IMAGE or vhost-user=PATH is required"), "%s", err);
	cr_assert_eq(add_disk(&cfg, "vhost-user=/nonexistent/minivmm-vublk.sock"), -1);
	cr_assert(strstr(err, "--disk: cannot connect to vhost-user socket "
			      "/nonexistent/minivmm-vublk.sock"),
		  "%s", err);
}

/* A back end that cannot serve a virtio-blk is a command-line error naming it. */
Test(disk_vhost_user, unusable_back_end_refused_at_the_command_line)
{
	struct fake f;
	fake_defaults(&f);
	f.protocol &= ~P_CONFIG;
	fake_listen(&f);
	char spec[128];
	snprintf(spec, sizeof(spec), "vhost-user=%s", sock_path);
	struct vm_config cfg;
	cr_assert_eq(add_disk(&cfg, spec), -1);
	char want[192];
	snprintf(want, sizeof(want),
		 "--disk: vhost-user back end at '%s': the back end does not "
		 "offer the CONFIG protocol feature",
		 sock_path);
	cr_assert(strstr(err, want), "%s", err);
	pthread_join(f.thread, NULL); /* the connection was closed */
	close(f.fd);
	close(f.listen_fd);
}

/* A usable back end: its socket moved where the filters name it, vhost-user's system calls
 * and no io_uring asked of the sandbox, RAM shared, and snapshots refused before anything is
 * paused (and a restore onto it). An image disk asks for none of this. */
Test(disk_vhost_user, shares_memory_sandbox_and_no_snapshot)
{
	struct fake f;
	fake_defaults(&f);
	fake_listen(&f);
	char spec[128];
	snprintf(spec, sizeof(spec), "vhost-user=%s,transport=mmio", sock_path);
	struct vm_config cfg;
	cr_assert_eq(add_disk(&cfg, spec), 0, "%s", err);
	cr_assert_eq(cfg.nr_devices, 1);
	const struct device_config *d = &cfg.devices[0];
	cr_assert_eq(d->transport, TRANSPORT_MMIO);
	cr_assert_eq(f.config_reads, 1, "the config is read at the command line");
	cr_assert(fcntl(SECCOMP_VHOST_USER_FD_BASE, F_GETFD) >= 0, "the socket was not moved");

	struct seccomp_needs needs = {0};
	d->kind->seccomp_needs(d->parsed, &needs);
	cr_assert(needs.vhost_user);
	cr_assert_not(needs.io_uring);
	cr_assert(d->kind->shares_memory_of(d->parsed));

	static struct vm vm;
	memset(&vm, 0, sizeof(vm));
	vm.cfg = &cfg;
	int fds[SNAPSHOT_NR_FILES] = {-1, -1, -1};
	cr_assert_eq(snapshot_save(&vm, fds, err, sizeof(err)), -1);
	cr_assert(strstr(err, "snapshot: device 0 (--disk): a disk on a vhost-user back end "
			      "cannot be saved"),
		  "%s", err);
	uint64_t sectors = 2048;
	cr_assert_eq(d->kind->snapshot->check(d->parsed, (uint8_t *)&sectors, sizeof(sectors), err,
					      sizeof(err)),
		     -1);
	cr_assert(strstr(err, "a disk on a vhost-user back end cannot be saved"), "%s", err);

	cli_free_config(&cfg); /* closes the connection: the fake ends */
	pthread_join(f.thread, NULL);
	close(f.fd);
	close(f.listen_fd);
	cr_assert(fcntl(SECCOMP_VHOST_USER_FD_BASE, F_GETFD) < 0, "the socket was left open");

	/* An image: none of it. */
	snprintf(sock_path, sizeof(sock_path), "%s/img", sock_dir);
	int img = open(sock_path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	cr_assert_geq(img, 0);
	cr_assert_eq(ftruncate(img, 1 << 20), 0);
	close(img);
	snprintf(spec, sizeof(spec), "path=%s", sock_path);
	cr_assert_eq(add_disk(&cfg, spec), 0, "%s", err);
	cr_assert_not(cfg.devices[0].kind->shares_memory_of(cfg.devices[0].parsed));
	cr_assert_eq(
	    cfg.devices[0].kind->snapshot->savable(cfg.devices[0].parsed, err, sizeof(err)), 0);
	memset(&needs, 0, sizeof(needs));
	cfg.devices[0].kind->seccomp_needs(cfg.devices[0].parsed, &needs);
	cr_assert_not(needs.vhost_user);
	cli_free_config(&cfg);
}
