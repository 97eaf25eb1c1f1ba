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

	/* An image: none of it (in sock_path's place, which the suite's fini removes). */
	unlink(sock_path);
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

/* ---- Debian's qemu-storage-daemon (package qemu-system-common): the real back end ---- */

static pid_t qsd_pid = -1;
static char qsd_dir[64];

static bool find_qsd(char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *dirs = strdup(path ? path : "");
	bool found = false;
	for (char *save, *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/qemu-storage-daemon", d);
		found = access(out, X_OK) == 0;
	}
	free(dirs);
	if (!found && access("/usr/bin/qemu-storage-daemon", X_OK) == 0) {
		snprintf(out, len, "/usr/bin/qemu-storage-daemon");
		found = true;
	}
	return found;
}

static void qsd_fini(void)
{
	if (qsd_pid > 0) {
		kill(qsd_pid, SIGKILL);
		waitpid(qsd_pid, NULL, 0);
		qsd_pid = -1;
	}
	if (qsd_dir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", qsd_dir);
		if (system(cmd) != 0)
			cr_log_warn("could not remove %s", qsd_dir);
		qsd_dir[0] = '\0';
	}
	teardown();
}

static const char *qsd_log(void)
{
	static char buf[2048];
	char path[96];
	snprintf(path, sizeof(path), "%s/log", qsd_dir);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

/* qemu-storage-daemon exporting the image qsd_dir/img (size bytes) as vhost-user-blk with
 * queues queues on qsd_dir/sock; a connection to it, handshake done. */
static struct vhost_user *qsd_start(uint64_t size, unsigned queues, struct vhost_user_info *info)
{
	char bin[256];
	if (!find_qsd(bin, sizeof(bin)))
		cr_skip_test("no qemu-storage-daemon (Debian: apt-get install qemu-system-common)");
	snprintf(qsd_dir, sizeof(qsd_dir), "/tmp/minivmm-qsd.XXXXXX");
	cr_assert(mkdtemp(qsd_dir));
	char img[96], sock[96], logpath[96], blockdev[192], export[256];
	snprintf(img, sizeof(img), "%s/img", qsd_dir);
	snprintf(sock, sizeof(sock), "%s/sock", qsd_dir);
	snprintf(logpath, sizeof(logpath), "%s/log", qsd_dir);
	int fd = open(img, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
	snprintf(blockdev, sizeof(blockdev), "driver=file,node-name=file0,filename=%s", img);
	snprintf(export, sizeof(export),
		 "type=vhost-user-blk,id=exp0,node-name=file0,addr.type=unix,addr.path=%s,"
		 "writable=on,num-queues=%u",
		 sock, queues);
	pid_t parent = getpid();
	qsd_pid = fork();
	cr_assert_geq(qsd_pid, 0);
	if (qsd_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* killed with the test, whatever ends it */
		if (getppid() != parent)
			_exit(126);
		int log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		execl(bin, bin, "--blockdev", blockdev, "--export", export, (char *)NULL);
		_exit(127);
	}
	char why[256];
	struct vhost_user *vu = vhost_user_connect(sock, 10000, why, sizeof(why));
	cr_assert(vu, "%s; qemu-storage-daemon said: %s", why, qsd_log());
	cr_assert_eq(vhost_user_handshake(vu, VHOST_USER_PROTOCOL_KNOWN, info), 0, "%s; it said %s",
		     vhost_user_error(vu), qsd_log());
	cr_log_info("qemu-storage-daemon: features 0x%llx, protocol features 0x%llx, %u queues",
		    (unsigned long long)info->features, (unsigned long long)info->protocol_features,
		    info->queues);
	return vu;
}

/* The handshake and GET_CONFIG: the capacity is the image's size (an odd number of sectors),
 * num-queues=2 gives MQ and 2 queues, the ring features and what a writable raw file has. */
Test(vhost_user_blk, qemu_storage_daemon_config, .init = setup, .fini = qsd_fini)
{
	const uint64_t size = (3u << 20) + 7 * 512;
	struct vhost_user_info info;
	struct vhost_user *vu = qsd_start(size, 2, &info);
	struct vhost_user_blk_backend be;
	cr_assert_eq(vhost_user_blk_probe(vu, &info, &be, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(get_le64(be.config), size / 512, "capacity %llu sectors",
		     (unsigned long long)get_le64(be.config));
	cr_assert_eq(be.queues, 2);
	cr_assert(be.features & B_MQ);
	cr_assert(be.features & F_VERSION_1);
	cr_assert(be.features & B_FLUSH);
	cr_assert_not(be.features & B_RO, "exported writable");
	cr_assert_not(be.features & (F_PROTOCOL | B_CONFIG_WCE));
	vhost_user_close(vu);
}

/* ---- requests through qemu-storage-daemon, the test as the guest's driver ---- */

#define QSIZE	   128
#define DESC_GPA   0x10000u
#define AVAIL_GPA  0x20000u
#define USED_GPA   0x30000u
#define HDR_GPA	   0x40000u
#define STATUS_GPA 0x41000u
#define DATA_GPA   0x100000u

static int kick_fd[VIRTIO_MAX_QUEUES], call_fd[VIRTIO_MAX_QUEUES];
static int kicks_taken_back[VIRTIO_MAX_QUEUES]; /* queue_kick_fd(q, false) calls */

static void t_signal_queue(struct virtio_dev *d, int q)
{
	(void)d;
	(void)q;
}

static void t_signal_config(struct virtio_dev *d)
{
	(void)d;
}

static int t_queue_kick_fd(struct virtio_dev *d, int q, bool external)
{
	(void)d;
	if (!external)
		kicks_taken_back[q]++;
	return external ? kick_fd[q] : -1;
}

static int t_queue_irqfd(struct virtio_dev *d, int q)
{
	(void)d;
	return call_fd[q];
}

static const struct virtio_transport_ops t_transport = {.signal_queue = t_signal_queue,
							.signal_config = t_signal_config,
							.queue_kick_fd = t_queue_kick_fd,
							.queue_irqfd = t_queue_irqfd};

static uint8_t *gpa(uint64_t a)
{
	uint8_t *p = guest_mem_ptr(&mem, a, 1);
	cr_assert(p);
	return p;
}

static void put_desc(int i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *d = gpa(DESC_GPA + 16u * (unsigned)i);
	put_le64(d, addr);
	put_le32(d + 8, len);
	put_le16(d + 12, flags);
	put_le16(d + 14, next);
}

/* One request on queue 0 (header, data of len bytes unless 0, status), made available and
 * kicked; waits for the back end's interrupt and returns the request's status. */
static uint8_t request(uint32_t type, uint64_t sector, uint32_t len, bool device_writes)
{
	static uint16_t avail;
	if (avail == 0)
		avail = get_le16(gpa(AVAIL_GPA + 2));
	uint8_t *h = gpa(HDR_GPA);
	put_le32(h, type);
	put_le32(h + 4, 0);
	put_le64(h + 8, sector);
	*gpa(STATUS_GPA) = 0xee;
	int n = 0;
	put_desc(n++, HDR_GPA, 16, 1, 1);
	if (len)
		put_desc(n++, DATA_GPA, len, (uint16_t)(1 | (device_writes ? 2 : 0)), 2);
	put_desc(n++, STATUS_GPA, 1, 2, 0);
	if (!len)
		put_desc(0, HDR_GPA, 16, 1, 1); /* header then status */
	put_le16(gpa(AVAIL_GPA + 4 + 2u * (avail % QSIZE)), 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	put_le16(gpa(AVAIL_GPA + 2), ++avail);
	uint64_t one = 1;
	cr_assert_eq(write(kick_fd[0], &one, 8), 8);
	/* Interrupts until the request is used (the back end also signals once when it is given
	 * the eventfd). */
	while (__atomic_load_n((uint16_t *)gpa(USED_GPA + 2), __ATOMIC_ACQUIRE) != avail) {
		struct pollfd p = {.fd = call_fd[0], .events = POLLIN};
		cr_assert_eq(poll(&p, 1, 10000), 1,
			     "no interrupt from qemu-storage-daemon (used index %u, %u made "
			     "available): %s",
			     get_le16(gpa(USED_GPA + 2)), avail, qsd_log());
		uint64_t v;
		cr_assert_eq(read(call_fd[0], &v, 8), 8);
	}
	cr_assert_eq(get_le32(gpa(USED_GPA + 4 + 8u * ((avail - 1u) % QSIZE))), 0);
	return *gpa(STATUS_GPA);
}

/* What a guest's driver does through minivmm's front end: the device brought to DRIVER_OK
 * hands its queue to qemu-storage-daemon (memory table, ring, eventfds), which then reads and
 * writes the image for requests written into shared guest memory, without the VMM; a reset
 * takes the ring back (GET_VRING_BASE: the index reached); the back end killed afterwards marks
 * the device as needing reset. */
Test(vhost_user_blk, qemu_storage_daemon_serves_requests, .init = setup, .fini = qsd_fini)
{
	const uint64_t size = 1u << 20;
	struct vhost_user_info info;
	struct vhost_user *vu = qsd_start(size, 1, &info);
	struct vhost_user_blk_backend be;
	cr_assert_eq(vhost_user_blk_probe(vu, &info, &be, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(be.queues, 1);
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++) {
		kick_fd[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		call_fd[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		cr_assert(kick_fd[q] >= 0 && call_fd[q] >= 0);
	}
	struct vhost_user_blk *b =
	    vhost_user_blk_create(&dev, vu, &be, &mem, &loop, "virtio-blk0", err, sizeof(err));
	cr_assert(b, "%s", err);
	dev.transport = &t_transport;

	/* A host-side pattern in the image for the guest to read. */
	char img[96];
	snprintf(img, sizeof(img), "%s/img", qsd_dir);
	int fd = open(img, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	uint8_t host[4096], back[4096];
	for (unsigned i = 0; i < sizeof(host); i++)
		host[i] = (uint8_t)(i * 13 + 5);
	cr_assert_eq(pwrite(fd, host, sizeof(host), 8 * 512), (ssize_t)sizeof(host));

	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(&dev, 0, (uint32_t)(B_FLUSH & be.features));
	virtio_dev_set_driver_features(&dev, 1, 1); /* VERSION_1 */
	virtio_dev_set_status(&dev, 1 | 2 | VIRTIO_STATUS_FEATURES_OK);
	struct virtqueue *vq = &dev.vqs[0];
	vq->size = QSIZE;
	vq->desc_gpa = DESC_GPA;
	vq->avail_gpa = AVAIL_GPA;
	vq->used_gpa = USED_GPA;
	virtio_dev_queue_ready(&dev, 0, true);
	virtio_dev_set_status(&dev, 1 | 2 | 8 | VIRTIO_STATUS_DRIVER_OK);
	cr_assert_eq(dev.status & (VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_DEVICE_NEEDS_RESET),
		     VIRTIO_STATUS_DRIVER_OK, "status 0x%x; qemu-storage-daemon said: %s",
		     dev.status, qsd_log());

	/* Read what the host wrote, write something else, flush; the image has it. */
	cr_assert_eq(request(0 /* IN */, 8, 4096, true), 0);
	cr_assert_eq(memcmp(gpa(DATA_GPA), host, 4096), 0, "the guest read other bytes");
	for (unsigned i = 0; i < 4096; i++)
		gpa(DATA_GPA)[i] = (uint8_t)(i * 7 + 3);
	cr_assert_eq(request(1 /* OUT */, 100, 4096, false), 0);
	cr_assert_eq(request(4 /* FLUSH */, 0, 0, false), 0);
	cr_assert_eq(pread(fd, back, sizeof(back), 100 * 512), (ssize_t)sizeof(back));
	cr_assert_eq(memcmp(back, gpa(DATA_GPA), 4096), 0, "the image does not hold the write");
	/* Past the end: an I/O error, the back end goes on. */
	cr_assert_eq(request(0, size / 512, 512, true), 1 /* IOERR */);
	close(fd);
	cr_assert_eq(dev.kicks, 0, "a kick reached the VMM");

	/* A reset stops the ring: qemu-storage-daemon gives back the index it reached. */
	virtio_dev_set_status(&dev, 0);
	cr_assert_eq(virtio_dev_status(&dev), 0);
	cr_assert_eq(kicks_taken_back[0], 1, "queue 0's kicks were not taken back");
	cr_assert_eq(waitpid(qsd_pid, NULL, WNOHANG), 0, "qemu-storage-daemon died: %s", qsd_log());

	/* The back end killed: the socket hangs up on the event loop, the device needs reset. */
	kill(qsd_pid, SIGKILL);
	waitpid(qsd_pid, NULL, 0);
	qsd_pid = -1;
	for (int i = 0; i < 50 && !(dev.status & VIRTIO_STATUS_DEVICE_NEEDS_RESET); i++)
		event_loop_run_once(&loop, 100);
	cr_assert(dev.status & VIRTIO_STATUS_DEVICE_NEEDS_RESET, "status 0x%x", dev.status);
	vhost_user_blk_destroy(b);
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++) {
		close(kick_fd[q]);
		close(call_fd[q]);
	}
}
