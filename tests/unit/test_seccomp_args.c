/* The seccomp filters' argument checks, probed as a compromised VMM would: each case installs
 * the real filters (vmm/sandbox/seccomp.c: the process filter, then a role's) in a child of its own
 * with every device and option configured (user networking, a control socket, io_uring, a
 * tap), and tries what the filters must refuse, next to what minivmm really does:
 * - the I/O thread's sockets: TCP, UDP and ICMP echo over IP only; no netlink, packet, vsock or
 *   raw socket, no Unix socket (so no connect by path or in the abstract namespace, no bind
 *   creating a file), no sendmsg (no descriptor passed out), only libslirp's socket options;
 * - madvise: the advice minivmm and glibc use, never MADV_HWPOISON and the like;
 * - no executable memory, in any role;
 * - a blk worker's fallocate: the device's two modes only, never one that grows the file;
 * - with a vhost-user back end: sendmsg and recvmsg on the vCPU threads, only on the back ends'
 *   descriptors (SECCOMP_VHOST_USER_FD_BASE...) and only with the client's flags; MADV_REMOVE
 *   on the I/O thread (the balloon on shared RAM). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seccomp_child.h"
#include "vmm/sandbox/seccomp.h"

#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static const struct seccomp_needs everything = {
    .user_net = true, .tap = true, .io_uring = true, .control_socket = true};

static const enum seccomp_role every_role[] = {
    SECCOMP_PROCESS,	SECCOMP_MAIN,	    SECCOMP_VCPU,     SECCOMP_IO,
    SECCOMP_BLK_WORKER, SECCOMP_CONSOLE_IN, SECCOMP_POPULATE,
};
#define NR_ROLES (sizeof(every_role) / sizeof(every_role[0]))

static enum seccomp_role role = SECCOMP_IO;
/* Runs in the child before the filters (may be NULL). */
static void (*prepare)(void);

/* body() in a child under the process filter and role's, everything configured; returns the
 * wait status, and what the child wrote on stderr in out. */
static const struct seccomp_policy everything_policy = {.needs = everything};
/* The policy the child runs under: everything above unless a test says otherwise. */
static const struct seccomp_policy *policy = &everything_policy;

static int run_filtered(void (*body)(void), char *out, size_t outlen)
{
	return seccomp_child_run(policy, role, prepare, body, out, outlen);
}

static void skip_under_sanitizers(void)
{
	if (!seccomp_default_on())
		cr_skip_test("sanitizer build: its runtime makes calls the filter refuses");
}

/* body is stopped by the filter on system call nr (exit status 1 and the report). */
static void expect_trap(void (*body)(void), long nr, const char *what)
{
	char out[512], want[80];
	int status = run_filtered(body, out, sizeof(out));
	snprintf(want, sizeof(want), "seccomp refused system call %ld;", nr);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1 && strstr(out, want),
		  "role %d, %s: not stopped (status %#x): %s", (int)role, what, status, out);
}

/* body runs to its end: whatever it checks held (exit status 0). */
static void expect_pass(void (*body)(void), const char *what)
{
	char out[512];
	int status = run_filtered(body, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "role %d, %s: status %#x: %s",
		  (int)role, what, status, out);
}

/* --- sockets --- */

static void open_netlink(void)
{
	socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	_exit(9);
}

static void open_packet(void)
{
	socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	_exit(9);
}

static void open_vsock(void)
{
	socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	_exit(9);
}

static void open_raw_ipv6(void)
{
	socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6);
	_exit(9);
}

static void open_tcp_with_a_protocol_number(void)
{
	socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_SCTP);
	_exit(9);
}

/* Refused with EACCES, the VMM going on (libslirp's fallback from a ping socket; glib's
 * journal writer): as root the kernel would give both. */
static void raw_and_unix_sockets_fail(void)
{
	static const int tries[][3] = {
	    {AF_INET, SOCK_RAW, IPPROTO_ICMP}, {AF_INET, SOCK_RAW, IPPROTO_RAW},
	    {AF_UNIX, SOCK_STREAM, 0},	       {AF_UNIX, SOCK_DGRAM, 0},
	    {AF_UNIX, SOCK_SEQPACKET, 0},
	};
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++)
		if (socket(tries[i][0], tries[i][1] | SOCK_CLOEXEC, tries[i][2]) != -1 ||
		    errno != EACCES)
			_exit(10 + (int)i);
}

/* What libslirp opens: TCP and UDP (an IPv6 one may fail in the kernel, not in the filter). */
static void ip_sockets_work(void)
{
	static const int tries[][2] = {
	    {AF_INET, SOCK_STREAM | SOCK_NONBLOCK},
	    {AF_INET, SOCK_DGRAM},
	    {AF_INET6, SOCK_STREAM},
	    {AF_INET6, SOCK_DGRAM},
	};
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		int fd = socket(tries[i][0], tries[i][1] | SOCK_CLOEXEC, 0);
		if (fd < 0 && (tries[i][0] == AF_INET || errno == EACCES))
			_exit(10 + (int)i);
		if (fd >= 0)
			close(fd);
	}
}

/* Files some tests make under /tmp: removed after each test, passed or failed. */
static char sock_path[80], other_path[80], disk_path[80];

static void remove_test_files(void)
{
	char made[96];
	snprintf(made, sizeof(made), "%s.new", sock_path);
	const char *paths[] = {sock_path, other_path, disk_path, made};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (paths[i][0] && strcmp(paths[i], ".new"))
			unlink(paths[i]);
}

TestSuite(seccomp_args, .fini = remove_test_files);

Test(seccomp_args, io_thread_opens_ip_sockets_only)
{
	skip_under_sanitizers();
	role = SECCOMP_IO;
	expect_pass(ip_sockets_work, "TCP and UDP sockets");
	expect_pass(raw_and_unix_sockets_fail, "raw and Unix sockets");
	for (size_t i = 0; i < 2; i++) {
		role = i ? SECCOMP_IO : SECCOMP_PROCESS;
		expect_trap(open_netlink, SYS_socket, "netlink");
		expect_trap(open_packet, SYS_socket, "AF_PACKET");
		expect_trap(open_vsock, SYS_socket, "AF_VSOCK");
		expect_trap(open_raw_ipv6, SYS_socket, "raw IPv6");
		expect_trap(open_tcp_with_a_protocol_number, SYS_socket, "SCTP");
	}
}

/* libslirp forwards a guest's ping through an unprivileged ICMP socket: in a network namespace
 * of its own whose net.ipv4.ping_group_range lets every group open one. */
static bool ping_sockets_allowed;

static void allow_ping_sockets(void)
{
	int fd = -1;
	ping_sockets_allowed =
	    unshare(CLONE_NEWNET) == 0 &&
	    (fd = open("/proc/sys/net/ipv4/ping_group_range", O_WRONLY | O_CLOEXEC)) >= 0 &&
	    write(fd, "0 2147483647", 12) == 12;
	if (fd >= 0)
		close(fd);
	if (!ping_sockets_allowed)
		_exit(77);
}

static void ping_socket_works(void)
{
	if (socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP) < 0)
		_exit(10);
}

Test(seccomp_args, io_thread_opens_a_ping_socket)
{
	skip_under_sanitizers();
	role = SECCOMP_IO;
	prepare = allow_ping_sockets;
	char out[512];
	int status = run_filtered(ping_socket_works, out, sizeof(out));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		cr_skip_test("needs root for a network namespace");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
}

/* The Unix sockets the I/O thread has: the control socket, listening, and a client's
 * connection (made before the filters). */
static int listener = -1, conn = -1, other = -1;

static int listen_at(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4))
		_exit(20);
	return fd;
}

static void control_socket_with_a_client(void)
{
	listener = listen_at(sock_path);
	other = listen_at(other_path); /* something else on the host to reach */
	int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	if (client < 0 || connect(client, (struct sockaddr *)&a, sizeof(a)))
		_exit(21);
	conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		_exit(22);
}

/* Neither socket can be bound anew (the file would be created) nor connected elsewhere. */
static void unix_sockets_stay_where_they_are(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s.new", sock_path);
	if (bind(conn, (struct sockaddr *)&a, sizeof(a)) != -1 ||
	    bind(listener, (struct sockaddr *)&a, sizeof(a)) != -1)
		_exit(10);
	struct sockaddr_un abstract = {.sun_family = AF_UNIX, .sun_path = "\0minivmm-probe"};
	if (bind(conn, (struct sockaddr *)&abstract, sizeof(abstract)) != -1)
		_exit(11);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", other_path);
	if (connect(conn, (struct sockaddr *)&a, sizeof(a)) != -1 ||
	    connect(listener, (struct sockaddr *)&a, sizeof(a)) != -1)
		_exit(12);
	/* the listener is the control socket still: nothing reached the other one */
	if (fcntl(other, F_SETFL, O_NONBLOCK) || accept(other, NULL, NULL) != -1 || errno != EAGAIN)
		_exit(13);
}

/* A descriptor passed out over the client's connection (SCM_RIGHTS). */
static void pass_a_descriptor_out(void)
{
	char byte = 'x', ctrl[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {&byte, 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof(ctrl)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &(int){STDERR_FILENO}, sizeof(int));
	sendmsg(conn, &mh, MSG_NOSIGNAL);
	_exit(9);
}

static void send_many(void)
{
	struct mmsghdr m = {0};
	sendmmsg(conn, &m, 1, 0);
	_exit(9);
}

Test(seccomp_args, io_thread_neither_binds_connects_nor_passes_unix_descriptors)
{
	skip_under_sanitizers();
	snprintf(sock_path, sizeof(sock_path), "/tmp/minivmm-seccomp-args-%d.sock", (int)getpid());
	snprintf(other_path, sizeof(other_path), "/tmp/minivmm-seccomp-args-%d.other",
		 (int)getpid());
	role = SECCOMP_IO;
	prepare = control_socket_with_a_client;
	expect_pass(unix_sockets_stay_where_they_are, "bind and connect");
	char path[96];
	snprintf(path, sizeof(path), "%s.new", sock_path);
	bool created = access(path, F_OK) == 0;
	unlink(path);
	expect_trap(pass_a_descriptor_out, SYS_sendmsg, "sendmsg");
	expect_trap(send_many, SYS_sendmmsg, "sendmmsg");
	unlink(sock_path);
	unlink(other_path);
	cr_assert_not(created, "a Unix socket's file was created");
}

static int inet_fd = -1;

static void open_inet_socket(void)
{
	inet_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (inet_fd < 0)
		_exit(20);
}

/* The options libslirp sets, and the one it reads. */
static void slirps_options_work(void)
{
	static const int opts[][2] = {
	    {SOL_SOCKET, SO_REUSEADDR}, {SOL_SOCKET, SO_OOBINLINE}, {IPPROTO_TCP, TCP_NODELAY},
	    {IPPROTO_IP, IP_TTL},	{IPPROTO_IP, IP_RECVERR},
	};
	int one = 1, v;
	socklen_t len = sizeof(v);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (setsockopt(inet_fd, opts[i][0], opts[i][1], &one, sizeof(one)))
			_exit(10 + (int)i);
	if (getsockopt(inet_fd, SOL_SOCKET, SO_ERROR, &v, &len))
		_exit(20);
}

static void attach_a_filter(void)
{
	struct sock_fprog prog = {0};
	setsockopt(inet_fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
	_exit(9);
}

static void set_a_mark(void)
{
	int mark = 1;
	setsockopt(inet_fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
	_exit(9);
}

static void bind_to_a_device(void)
{
	setsockopt(inet_fd, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3);
	_exit(9);
}

static void go_transparent(void)
{
	int one = 1;
	setsockopt(inet_fd, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one));
	_exit(9);
}

static void read_another_option(void)
{
	int v;
	socklen_t len = sizeof(v);
	getsockopt(inet_fd, SOL_SOCKET, SO_RCVBUF, &v, &len);
	_exit(9);
}

Test(seccomp_args, io_thread_sets_slirps_socket_options_only)
{
	skip_under_sanitizers();
	role = SECCOMP_IO;
	prepare = open_inet_socket;
	expect_pass(slirps_options_work, "libslirp's options");
	expect_trap(attach_a_filter, SYS_setsockopt, "SO_ATTACH_FILTER");
	expect_trap(set_a_mark, SYS_setsockopt, "SO_MARK");
	expect_trap(bind_to_a_device, SYS_setsockopt, "SO_BINDTODEVICE");
	expect_trap(go_transparent, SYS_setsockopt, "IP_TRANSPARENT");
	expect_trap(read_another_option, SYS_getsockopt, "getsockopt SO_RCVBUF");
}

/* --- madvise --- */

/* An address with nothing mapped: were the call let through, the kernel would fail it without
 * touching a page (MADV_HWPOISON takes a page out of service where it finds one). */
static void *unmapped;

static void find_unmapped(void)
{
	unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (unmapped == MAP_FAILED || munmap(unmapped, 4096))
		_exit(20);
}

static void hwpoison(void)
{
	madvise(unmapped, 4096, MADV_HWPOISON);
	_exit(9);
}

static void soft_offline(void)
{
	madvise(unmapped, 4096, MADV_SOFT_OFFLINE);
	_exit(9);
}

static void mergeable(void)
{
	madvise(unmapped, 4096, MADV_MERGEABLE);
	_exit(9);
}

static void remove_pages(void)
{
	madvise(unmapped, 4096, MADV_REMOVE);
	_exit(9);
}

static void populate_write(void)
{
	madvise(unmapped, 4096, MADV_POPULATE_WRITE);
	_exit(9);
}

/* The balloon's and glibc's MADV_DONTNEED, in every role. */
static void dontneed_works(void)
{
	void *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, 1 << 16, MADV_DONTNEED))
		_exit(10);
}

static void populate_works(void)
{
	void *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, 1 << 16, MADV_POPULATE_WRITE))
		_exit(10);
}

Test(seccomp_args, madvise_only_the_advice_minivmm_uses)
{
	skip_under_sanitizers();
	prepare = find_unmapped;
	for (size_t i = 0; i < NR_ROLES; i++) {
		role = every_role[i];
		expect_pass(dontneed_works, "MADV_DONTNEED");
		expect_trap(hwpoison, SYS_madvise, "MADV_HWPOISON");
		expect_trap(soft_offline, SYS_madvise, "MADV_SOFT_OFFLINE");
		expect_trap(mergeable, SYS_madvise, "MADV_MERGEABLE");
		expect_trap(remove_pages, SYS_madvise, "MADV_REMOVE");
		/* pre-faulting: the populate thread's alone */
		if (role == SECCOMP_POPULATE || role == SECCOMP_PROCESS)
			expect_pass(populate_works, "MADV_POPULATE_WRITE");
		else
			expect_trap(populate_write, SYS_madvise, "MADV_POPULATE_WRITE");
	}
}

/* --- executable memory --- */

static void make_executable(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(10);
	mprotect(p, 4096, PROT_READ | PROT_EXEC);
	_exit(9);
}

static void map_executable(void)
{
	mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	_exit(9);
}

static void pkey_executable(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	syscall(SYS_pkey_mprotect, p, 4096, PROT_READ | PROT_EXEC, 0);
	_exit(9);
}

/* What threads and malloc do: read-write memory, a guard page, read-only. */
static void plain_memory_works(void)
{
	char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p, 4096, PROT_NONE) || mprotect(p + 4096, 4096, PROT_READ))
		_exit(10);
}

Test(seccomp_args, no_role_makes_memory_executable)
{
	skip_under_sanitizers();
	for (size_t i = 0; i < NR_ROLES; i++) {
		role = every_role[i];
		expect_pass(plain_memory_works, "read-write and read-only memory");
		expect_trap(make_executable, SYS_mprotect, "mprotect(PROT_EXEC)");
		expect_trap(map_executable, SYS_mmap, "mmap(PROT_EXEC)");
		expect_trap(pkey_executable, SYS_pkey_mprotect, "pkey_mprotect(PROT_EXEC)");
	}
}

/* --- a blk worker's fallocate --- */

static int disk_fd = -1;

static void open_disk(void)
{
	disk_fd = open(disk_path, O_RDWR | O_CLOEXEC);
	if (disk_fd < 0)
		_exit(20);
}

/* The guest's discard and write-zeroes (tmpfs has no ZERO_RANGE: the kernel says so). */
static void discard_and_zeroes_work(void)
{
	if (fallocate(disk_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) ||
	    (fallocate(disk_fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 4096, 4096) &&
	     errno != EOPNOTSUPP))
		_exit(10);
}

static void grow_the_image(void)
{
	fallocate(disk_fd, 0, 1 << 20, 1 << 20);
	_exit(9);
}

/* KEEP_SIZE alone: blocks past the end without a larger size (RLIMIT_FSIZE does not see it). */
static void allocate_past_the_end(void)
{
	fallocate(disk_fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20);
	_exit(9);
}

Test(seccomp_args, blk_worker_fallocates_within_the_image_only)
{
	skip_under_sanitizers();
	snprintf(disk_path, sizeof(disk_path), "/tmp/minivmm-seccomp-args-%d.img", (int)getpid());
	int fd = open(disk_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	role = SECCOMP_BLK_WORKER;
	prepare = open_disk;
	expect_pass(discard_and_zeroes_work, "discard and write-zeroes");
	expect_trap(grow_the_image, SYS_fallocate, "fallocate(0)");
	expect_trap(allocate_past_the_end, SYS_fallocate, "fallocate(KEEP_SIZE)");
	struct stat st;
	cr_assert_eq(stat(disk_path, &st), 0);
	unlink(disk_path);
	cr_assert_eq(st.st_size, 1 << 20);
}

/* --- a vhost-user back end's socket --- */

static const struct seccomp_policy vhost_user_policy = {
    .needs = {.user_net = true, .control_socket = true, .vhost_user = true}};

#define VU_FD SECCOMP_VHOST_USER_FD_BASE
/* Copies of one end of a socketpair: on the first and last of the back ends' descriptors,
 * and on the ones just outside (999, 1008) or that differ in one bit the mask must keep
 * (1016, 992); peer_fd is the other end. */
static const int vu_copies[] = {VU_FD,	    VU_FD + SECCOMP_VHOST_USER_FDS - 1,
				VU_FD - 1,  VU_FD + SECCOMP_VHOST_USER_FDS,
				VU_FD + 16, VU_FD - 8};
static int peer_fd = -1, low_fd = -1;
/* What the trapped bodies try (send_fd -1: the socketpair's own low descriptor). */
static int send_fd, send_flags, recv_fd, recv_flags;
static uint8_t *shared_page;

static void vhost_user_sockets(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		_exit(20);
	for (size_t i = 0; i < sizeof(vu_copies) / sizeof(vu_copies[0]); i++)
		if (dup3(sv[0], vu_copies[i], O_CLOEXEC) != vu_copies[i])
			_exit(21);
	low_fd = sv[0];
	peer_fd = sv[1];
	/* a reply waiting to be read */
	if (write(peer_fd, "replies", 7) != 7)
		_exit(22);
	int memfd = memfd_create("seccomp-args", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, 4096))
		_exit(23);
	shared_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (shared_page == MAP_FAILED)
		_exit(24);
}

/* What devices/backends/vhost_user.c sends: a message with a descriptor attached. */
static ssize_t send_one(int fd, int flags)
{
	char byte = 'm', ctrl[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {&byte, 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof(ctrl)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &peer_fd, sizeof(int));
	return sendmsg(fd, &mh, flags);
}

static ssize_t recv_one(int fd, int flags)
{
	char byte, ctrl[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = {&byte, 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof(ctrl)};
	return recvmsg(fd, &mh, flags);
}

/* What the client does on a vCPU thread: send, wait for the reply, read it. */
static void vhost_user_messages_work(void)
{
	if (send_one(VU_FD, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		_exit(10);
	if (send_one(VU_FD + SECCOMP_VHOST_USER_FDS - 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		_exit(11);
	struct pollfd p = {.fd = VU_FD, .events = POLLIN};
	if (poll(&p, 1, 1000) != 1)
		_exit(12);
	struct timespec ts = {0};
	if (ppoll(&p, 1, &ts, NULL) != 1)
		_exit(13);
	if (recv_one(VU_FD, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
		_exit(14);
}

static void send_elsewhere(void)
{
	send_one(send_fd < 0 ? low_fd : send_fd, send_flags);
	_exit(9);
}

static void recv_elsewhere(void)
{
	recv_one(recv_fd, recv_flags);
	_exit(9);
}

static void remove_works(void)
{
	shared_page[0] = 1;
	if (madvise(shared_page, 4096, MADV_REMOVE) || shared_page[0])
		_exit(10);
}

static void remove_shared(void)
{
	madvise(shared_page, 4096, MADV_REMOVE);
	_exit(9);
}

static void expect_send_trap(int fd, int flags, const char *what)
{
	send_fd = fd;
	send_flags = flags;
	expect_trap(send_elsewhere, SYS_sendmsg, what);
}

static void expect_recv_trap(int fd, int flags, const char *what)
{
	recv_fd = fd;
	recv_flags = flags;
	expect_trap(recv_elsewhere, SYS_recvmsg, what);
}

Test(seccomp_args, vcpu_talks_to_a_vhost_user_backend_on_its_descriptors_only)
{
	skip_under_sanitizers();
	policy = &vhost_user_policy;
	prepare = vhost_user_sockets;
	role = SECCOMP_VCPU;
	expect_pass(vhost_user_messages_work, "sendmsg, poll, recvmsg on the back end's socket");
	const int ok = MSG_NOSIGNAL | MSG_DONTWAIT;
	expect_send_trap(VU_FD - 1, ok, "sendmsg on 999");
	expect_send_trap(VU_FD + SECCOMP_VHOST_USER_FDS, ok, "sendmsg on 1008");
	expect_send_trap(VU_FD + 16, ok, "sendmsg on 1016");
	expect_send_trap(VU_FD - 8, ok, "sendmsg on 992");
	expect_send_trap(-1, ok, "sendmsg on the socketpair's low descriptor");
	expect_send_trap(VU_FD, MSG_NOSIGNAL, "sendmsg that may block");
	expect_send_trap(VU_FD, ok | MSG_MORE, "sendmsg with another flag");
	expect_recv_trap(VU_FD - 1, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, "recvmsg on 999");
	expect_recv_trap(VU_FD, MSG_DONTWAIT, "recvmsg whose descriptors survive exec");
	expect_trap(remove_shared, SYS_madvise, "MADV_REMOVE on a vCPU thread");
}

/* Only a vCPU thread talks to the back end; the I/O thread frees shared RAM's pages. */
Test(seccomp_args, io_thread_sends_no_vhost_user_message_but_removes_pages)
{
	skip_under_sanitizers();
	policy = &vhost_user_policy;
	prepare = vhost_user_sockets;
	role = SECCOMP_IO;
	expect_pass(remove_works, "MADV_REMOVE on shared RAM");
	expect_send_trap(VU_FD, MSG_NOSIGNAL | MSG_DONTWAIT, "sendmsg on the I/O thread");
}

/* Without a vhost-user device none of it is allowed. */
Test(seccomp_args, no_vhost_user_messages_without_a_backend)
{
	skip_under_sanitizers();
	prepare = vhost_user_sockets;
	role = SECCOMP_VCPU;
	expect_send_trap(VU_FD, MSG_NOSIGNAL | MSG_DONTWAIT, "sendmsg without vhost-user");
	role = SECCOMP_IO;
	expect_trap(remove_shared, SYS_madvise, "MADV_REMOVE without vhost-user");
}
