/* The seccomp allow-lists: what a running VMM does still works (threads, memory, I/O, the KVM
 * ioctls), what it must never do (open a file for writing, exec, fork, inject keystrokes with
 * TIOCSTI, use sockets or io_uring it was not configured for, KVM_RUN outside a vCPU thread,
 * signal or renice another process, unlink, fcntl F_SETOWN, stat through a directory fd)
 * stops the process with status 1 and a line naming the call; reading a file fails with EACCES
 * (glibc may try), in every role, the I/O thread with user networking included. Each thread
 * role is checked with every device configured. Each case runs in a child of its own: a filter
 * cannot be removed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <poll.h>
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devices/backends/blk_io.h"
#include "base/guest_mem.h"
#include "vmm/api/fd_passing.h"
#include "seccomp_child.h"
#include "vmm/sandbox/seccomp.h"
#include "vmm/snapshot/snapshot_files.h"

static void note_restore(void)
{
	static const char msg[] = "hook ran\n";
	ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)w;
}

/* What the child installs: the process filter, then (unless SECCOMP_PROCESS) role's. */
static struct seccomp_policy policy;
static enum seccomp_role role = SECCOMP_PROCESS;
/* Runs in the child before the filters: opens what the body uses (may be NULL). */
static void (*prepare)(void);

static void *thread_body(void *arg)
{
	return arg;
}

/* Runs body() in a child under the filter, stderr captured; returns the wait status. */
static int run_filtered(void (*body)(void), char *out, size_t outlen)
{
	policy.on_violation = note_restore;
	return seccomp_child_run(&policy, role, prepare, body, out, outlen);
}

static void skip_under_sanitizers(void)
{
	if (!seccomp_default_on())
		cr_skip_test("sanitizer build: its runtime makes calls the filter refuses");
}

/* body must be stopped by the filter: exit status 1 and the report naming system call nr
 * (any, when nr < 0). Returns what the child wrote. */
static void expect_refused(void (*body)(void), int nr, char *out, size_t outlen)
{
	int status = run_filtered(body, out, outlen);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x: %s", status, out);
	char want[80] = "seccomp refused system call";
	if (nr >= 0)
		snprintf(want, sizeof(want), "seccomp refused system call %d;", nr);
	cr_assert(strstr(out, want), "message: %s", out);
}

/* The calling thread's status and name, opened before the filter. */
static int status_fd = -1, comm_fd = -1;

static void allowed_work(void)
{
	pthread_t t;
	void *ret = NULL;
	if (pthread_create(&t, NULL, thread_body, (void *)7) || pthread_join(t, &ret) ||
	    ret != (void *)7)
		_exit(3);
	void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, 1 << 20, MADV_DONTNEED) || munmap(p, 1 << 20))
		_exit(4);
	/* Naming a thread (prctl PR_SET_NAME): allowed, and it takes. */
	if (pthread_setname_np(pthread_self(), "named"))
		_exit(7);
	char name[16];
	ssize_t n = read(comm_fd, name, sizeof(name) - 1);
	if (n <= 0 || (name[n] = 0, strcmp(name, "named\n")))
		_exit(8);
}

static void open_status(void)
{
	status_fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	comm_fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC);
}

static void in_filter_mode(void)
{
	char buf[4096];
	ssize_t n = read(status_fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		_exit(5);
	buf[n] = 0;
	if (!strstr(buf, "Seccomp:\t2"))
		_exit(6);
	allowed_work();
}

Test(seccomp, running_a_vmm_stays_allowed)
{
	skip_under_sanitizers();
	char out[512];
	prepare = open_status;
	int status = run_filtered(in_filter_mode, out, sizeof(out));
	cr_assert(WIFEXITED(status), "child died: %s", out);
	cr_assert_eq(WEXITSTATUS(status), 0, "exit %d: %s", WEXITSTATUS(status), out);
	cr_assert_str_empty(out);
}

static void open_for_writing(void)
{
	open("/tmp/minivmm-seccomp-test", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	_exit(9); /* not reached */
}

Test(seccomp, opening_a_file_for_writing_stops_the_process)
{
	skip_under_sanitizers();
	char out[512];
	expect_refused(open_for_writing, (int)SYS_openat, out, sizeof(out));
	cr_assert(strstr(out, "hook ran"), "the terminal hook did not run: %s", out);
	cr_assert_neq(access("/tmp/minivmm-seccomp-test", F_OK), 0);
}

static void run_exec(void)
{
	char *argv[] = {"/bin/true", NULL};
	execv("/bin/true", argv);
	_exit(9);
}

Test(seccomp, exec_stops_the_process)
{
	skip_under_sanitizers();
	char out[512];
	expect_refused(run_exec, -1, out, sizeof(out));
}

static void run_fork(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(8); /* a child got through */
	_exit(9);
}

Test(seccomp, fork_stops_the_process)
{
	skip_under_sanitizers();
	char out[512];
	expect_refused(run_fork, (int)SYS_clone, out, sizeof(out));
}

/* Refused without stopping the process: glibc's malloc may read a /proc file at any time. */
static void read_only_open_fails(void)
{
	if (open("/etc/hostname", O_RDONLY | O_CLOEXEC) != -1 || errno != EACCES)
		_exit(10);
}

static void expect_exit_0(void (*body)(void))
{
	char out[512];
	int status = run_filtered(body, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
}

Test(seccomp, opening_a_file_to_read_fails_with_eacces)
{
	skip_under_sanitizers();
	expect_exit_0(read_only_open_fails);
	role = SECCOMP_VCPU;
	expect_exit_0(read_only_open_fails);
}

/* KVM: a VM with an in-kernel irqchip, made before the filters. */
static int vm_fd = -1;

static void create_vm(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	vm_fd = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm_fd < 0 || ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		_exit(20);
}

static void skip_without_kvm(void)
{
	if (access("/dev/kvm", R_OK | W_OK))
		cr_skip_test("no usable /dev/kvm");
}

static void inject_keystroke(void)
{
	char c = 'x';
	ioctl(STDIN_FILENO, TIOCSTI, &c);
	_exit(9);
}

static void raise_an_irq(void)
{
	struct kvm_irq_level irq = {.irq = 4, .level = 1};
	if (ioctl(vm_fd, KVM_IRQ_LINE, &irq) < 0)
		_exit(10);
}

Test(seccomp, tiocsti_stops_the_process_while_kvm_ioctls_work)
{
	skip_under_sanitizers();
	skip_without_kvm();
	prepare = create_vm;
	char out[512];
	int status = run_filtered(raise_an_irq, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	expect_refused(inject_keystroke, (int)SYS_ioctl, out, sizeof(out));
}

static void run_a_vcpu_ioctl(void)
{
	ioctl(vm_fd, KVM_RUN, 0); /* the filter looks at the request, not the descriptor */
	_exit(9);
}

static void run_returns(void)
{
	if (ioctl(-1, KVM_RUN, 0) == 0 || errno != EBADF) /* reached the kernel */
		_exit(10);
}

Test(seccomp, kvm_run_only_on_vcpu_threads)
{
	skip_under_sanitizers();
	char out[512];
	role = SECCOMP_VCPU;
	int status = run_filtered(run_returns, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	role = SECCOMP_IO;
	expect_refused(run_a_vcpu_ioctl, (int)SYS_ioctl, out, sizeof(out));
	role = SECCOMP_MAIN;
	expect_refused(run_a_vcpu_ioctl, (int)SYS_ioctl, out, sizeof(out));
}

static void open_a_socket(void)
{
	socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	_exit(9);
}

static void socket_works(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		_exit(10);
	close(fd);
}

Test(seccomp, sockets_only_for_user_networking_on_the_io_thread)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs =
	    (struct seccomp_needs){.tap = true, .io_uring = true, .control_socket = true};
	expect_refused(open_a_socket, (int)SYS_socket, out, sizeof(out));
	policy.needs.user_net = true;
	role = SECCOMP_IO;
	int status = run_filtered(socket_works, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	role = SECCOMP_VCPU;
	expect_refused(open_a_socket, (int)SYS_socket, out, sizeof(out));
}

static void enter_a_ring(void)
{
	syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0);
	_exit(9);
}

static void ring_call_returns(void)
{
	if (syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0) == 0 || errno != EBADF)
		_exit(10);
}

Test(seccomp, io_uring_only_with_a_disk_on_it)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs =
	    (struct seccomp_needs){.user_net = true, .tap = true, .control_socket = true};
	expect_refused(enter_a_ring, (int)SYS_io_uring_enter, out, sizeof(out));
	policy.needs.io_uring = true;
	role = SECCOMP_IO;
	int status = run_filtered(ring_call_returns, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
}

/* fd 9999: never open (fd -1 is io_uring_register's "blind" form on newer kernels). */
static void enable_rings_returns(void)
{
	if (syscall(SYS_io_uring_register, 9999, IORING_REGISTER_ENABLE_RINGS, NULL, 0) == 0 ||
	    errno != EBADF)
		_exit(10);
}

static void enable_rings(void)
{
	syscall(SYS_io_uring_register, 9999, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	_exit(9);
}

static void register_files(void)
{
	int fd = 0;
	syscall(SYS_io_uring_register, 9999, IORING_REGISTER_FILES, &fd, 1);
	_exit(9);
}

/* tx-uring=on: the I/O thread enables the tap's ring (which makes it the ring's submitter);
 * no other register call, and no other thread. */
Test(seccomp, io_uring_register_only_enables_rings_on_the_io_thread)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs = (struct seccomp_needs){.tap = true, .io_uring = true};
	role = SECCOMP_IO;
	int status = run_filtered(enable_rings_returns, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	expect_refused(register_files, (int)SYS_io_uring_register, out, sizeof(out));
	role = SECCOMP_VCPU;
	expect_refused(enable_rings, (int)SYS_io_uring_register, out, sizeof(out));
	role = SECCOMP_IO;
	policy.needs.io_uring = false;
	expect_refused(enable_rings, (int)SYS_io_uring_register, out, sizeof(out));
}

/* Every thread role, each with every device and option that widens the filters configured:
 * what a role refuses, it refuses whatever else is on. */
static const enum seccomp_role every_role[] = {
    SECCOMP_PROCESS,	SECCOMP_MAIN,	    SECCOMP_VCPU,     SECCOMP_IO,
    SECCOMP_BLK_WORKER, SECCOMP_CONSOLE_IN, SECCOMP_POPULATE,
};
#define NR_ROLES (sizeof(every_role) / sizeof(every_role[0]))

static const struct seccomp_needs everything = {
    .user_net = true, .tap = true, .io_uring = true, .control_socket = true};

/* The roles that run the VMM's own code (descriptors, event loops, KVM). */
static bool core_role(enum seccomp_role r)
{
	return r == SECCOMP_PROCESS || r == SECCOMP_MAIN || r == SECCOMP_VCPU || r == SECCOMP_IO;
}

/* Another process, to be signalled or reniced; it dies with the test. */
static pid_t victim = -1;

static void start_victim(void)
{
	pid_t parent = getpid();
	victim = fork();
	cr_assert_neq(victim, -1);
	if (victim == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (;;)
			pause();
	}
}

static bool victim_alive(void)
{
	return waitpid(victim, NULL, WNOHANG) == 0;
}

static void stop_victim(void)
{
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
}

static void kill_the_victim(void)
{
	syscall(SYS_tgkill, victim, victim, SIGKILL);
	_exit(9);
}

static void signal_own_thread(void)
{
	if (syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 0))
		_exit(10);
}

Test(seccomp, tgkill_only_within_the_process)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs = everything;
	start_victim();
	for (size_t i = 0; i < NR_ROLES; i++) {
		role = every_role[i];
		expect_refused(kill_the_victim, (int)SYS_tgkill, out, sizeof(out));
		cr_assert(victim_alive(), "role %d killed another process", (int)role);
		expect_exit_0(signal_own_thread);
	}
	stop_victim();
}

#define UNLINK_PROBE "/tmp/minivmm-seccomp-unlink-test"

static void unlink_probe(void)
{
	unlinkat(AT_FDCWD, UNLINK_PROBE, 0);
	_exit(9);
}

static void rmdir_probe(void)
{
	unlinkat(AT_FDCWD, UNLINK_PROBE ".d", AT_REMOVEDIR);
	_exit(9);
}

/* The control socket is removed by a helper process (sock_reaper.c): no thread unlinks. */
Test(seccomp, no_thread_may_unlink)
{
	skip_under_sanitizers();
	char out[512];
	int fd = open(UNLINK_PROBE, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert(mkdir(UNLINK_PROBE ".d", 0700) == 0 || errno == EEXIST);
	policy.needs = everything;
	bool kept = true;
	for (size_t i = 0; i < NR_ROLES && kept; i++) {
		role = every_role[i];
		expect_refused(unlink_probe, (int)SYS_unlinkat, out, sizeof(out));
		expect_refused(rmdir_probe, (int)SYS_unlinkat, out, sizeof(out));
		kept = access(UNLINK_PROBE, F_OK) == 0 && access(UNLINK_PROBE ".d", F_OK) == 0;
	}
	unlink(UNLINK_PROBE);
	rmdir(UNLINK_PROBE ".d");
	cr_assert(kept, "role %d removed a file", (int)role);
}

#define CREATE_PROBE "/tmp/minivmm-seccomp-create-test"

static void create_new_file(void)
{
	syscall(SYS_openat, AT_FDCWD, CREATE_PROBE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	_exit(9);
}

static void make_directory(void)
{
	syscall(SYS_mkdir, CREATE_PROBE ".d", 0700);
	_exit(9);
}

static void make_directory_at(void)
{
	syscall(SYS_mkdirat, AT_FDCWD, CREATE_PROBE ".d", 0700);
	_exit(9);
}

/* A snapshot is written into files the control socket's client made and passed: no thread
 * creates a file or a directory, the I/O thread with a control socket included. */
Test(seccomp, no_thread_may_create_a_file_or_directory)
{
	skip_under_sanitizers();
	char out[512];
	unlink(CREATE_PROBE);
	rmdir(CREATE_PROBE ".d");
	policy.needs = everything;
	bool none = true;
	for (size_t i = 0; i < NR_ROLES && none; i++) {
		role = every_role[i];
		expect_refused(create_new_file, (int)SYS_openat, out, sizeof(out));
		expect_refused(make_directory, (int)SYS_mkdir, out, sizeof(out));
		expect_refused(make_directory_at, (int)SYS_mkdirat, out, sizeof(out));
		none = access(CREATE_PROBE, F_OK) != 0 && access(CREATE_PROBE ".d", F_OK) != 0;
	}
	unlink(CREATE_PROBE);
	rmdir(CREATE_PROBE ".d");
	cr_assert(none, "role %d created a file or directory", (int)role);
}

static int snap_sock[2] = {-1, -1};
static char snap_dir[64];
static struct guest_mem snap_mem;

/* Before the filters: guest RAM as minivmm maps it (its pagemap descriptor opened with it), a
 * connected pair, and the client's files passed over it (as ctl does). */
static void pass_snapshot_files(void)
{
	int fds[SNAPSHOT_NR_FILES];
	char err[256];
	if (guest_mem_init(&snap_mem, 16 << 20, false, false) || snap_mem.pagemap_fd < 0)
		_exit(22);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, snap_sock) ||
	    snapshot_create_files(snap_dir, fds, err, sizeof(err)))
		_exit(20);
	if (send_with_fds(snap_sock[1], "x", 1, fds, SNAPSHOT_NR_FILES) != 1)
		_exit(21);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
}

/* Under the I/O thread's filter: take the files and write a snapshot into them. */
static void write_passed_snapshot(void)
{
	char c;
	int fds[SNAPSHOT_NR_FILES], nfds;
	if (recv_with_fds(snap_sock[0], &c, 1, 0, fds, SNAPSHOT_NR_FILES, &nfds) != 1 ||
	    nfds != SNAPSHOT_NR_FILES)
		_exit(10);
	/* One page written, the rest never touched: found by reading the pagemap (pread64). */
	memset(snap_mem.mapping, 0x5a, 4096);
	static struct snapshot_state st;
	st.config = (struct snapshot_config){.memory_bytes = snap_mem.ram_size, .nr_cpus = 1};
	char err[256];
	if (snapshot_write_files(fds, &st, &snap_mem, err, sizeof(err)))
		_exit(11);
}

static int pagemap_fd = -1;

static void open_pagemap(void)
{
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap_fd < 0)
		_exit(20);
}

static void read_pagemap(void)
{
	uint64_t e;
	pread(pagemap_fd, &e, sizeof(e), 0);
	_exit(9);
}

/* The pagemap read the snapshot adds (mem_holes.c) is the I/O thread's with a control socket
 * only: not a vCPU's, not an I/O thread's without the socket, not the main thread's. */
Test(seccomp, pagemap_reads_only_for_the_io_threads_snapshots)
{
	skip_under_sanitizers();
	char out[512];
	prepare = open_pagemap;
	policy.needs = (struct seccomp_needs){.control_socket = true};
	role = SECCOMP_VCPU;
	expect_refused(read_pagemap, (int)SYS_pread64, out, sizeof(out));
	role = SECCOMP_MAIN;
	expect_refused(read_pagemap, (int)SYS_pread64, out, sizeof(out));
	policy.needs = (struct seccomp_needs){.tap = true};
	role = SECCOMP_IO;
	expect_refused(read_pagemap, (int)SYS_pread64, out, sizeof(out));
}

/* The counterpart: what the control socket's snapshot needs, the I/O thread may do. */
Test(seccomp, io_thread_writes_a_snapshot_into_passed_files)
{
	skip_under_sanitizers();
	char out[512];
	snprintf(snap_dir, sizeof(snap_dir), "/tmp/minivmm-seccomp-snap-%d", (int)getpid());
	policy.needs = (struct seccomp_needs){.control_socket = true};
	role = SECCOMP_IO;
	prepare = pass_snapshot_files;
	int status = run_filtered(write_passed_snapshot, out, sizeof(out));
	struct snapshot_state *back = NULL;
	int memfd = -1;
	char err[256] = "";
	int rc = snapshot_open_dir(snap_dir, &back, &memfd, err, sizeof(err));
	free(back);
	if (memfd >= 0)
		close(memfd);
	snapshot_remove_files(snap_dir);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	cr_assert_eq(rc, 0, "what was written does not load: %s", err);
}

/* Opened read-only before the filters would be readable: only the filter stops this. */
static void read_shadow_fails(void)
{
	if (openat(AT_FDCWD, "/etc/shadow", O_RDONLY | O_CLOEXEC) != -1 || errno != EACCES)
		_exit(10);
	if (openat(AT_FDCWD, "/etc/hostname", O_RDONLY | O_CLOEXEC) != -1 || errno != EACCES)
		_exit(11);
}

static int etc_fd = -1;

static void open_etc(void)
{
	etc_fd = open("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void open_through_a_directory(void)
{
	if (openat(etc_fd, "hostname", O_RDONLY | O_CLOEXEC) != -1 || errno != EACCES)
		_exit(10);
}

/* libslirp's resolv.conf is read before the filters (slirp.c): no role opens a file, the I/O
 * thread with user networking included. */
Test(seccomp, no_role_opens_a_file_even_with_user_networking)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs = everything;
	prepare = open_etc;
	for (size_t i = 0; i < NR_ROLES; i++) {
		role = every_role[i];
		expect_exit_0(read_shadow_fails);
		expect_exit_0(open_through_a_directory);
		expect_refused(open_for_writing, (int)SYS_openat, out, sizeof(out));
	}
}

static void set_owner(void)
{
	fcntl(STDERR_FILENO, F_SETOWN, victim);
	_exit(9);
}

static void set_signal(void)
{
	fcntl(STDERR_FILENO, F_SETSIG, SIGKILL);
	_exit(9);
}

static void descriptor_flags_work(void)
{
	int fl = fcntl(STDERR_FILENO, F_GETFL);
	int fd = fcntl(STDERR_FILENO, F_GETFD);
	if (fl < 0 || fd < 0 || fcntl(STDERR_FILENO, F_SETFL, fl) ||
	    fcntl(STDERR_FILENO, F_SETFD, fd))
		_exit(10);
}

Test(seccomp, fcntl_only_for_descriptor_flags)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs = everything;
	start_victim();
	for (size_t i = 0; i < NR_ROLES; i++) {
		role = every_role[i];
		expect_refused(set_owner, (int)SYS_fcntl, out, sizeof(out));
		expect_refused(set_signal, (int)SYS_fcntl, out, sizeof(out));
		if (core_role(role))
			expect_exit_0(descriptor_flags_work);
	}
	stop_victim();
}

static void stat_through_a_directory(void)
{
	struct stat st;
	fstatat(etc_fd, "hostname", &st, 0);
	_exit(9);
}

static void stat_from_the_root_works(void)
{
	struct stat st;
	if (stat("/", &st) || fstat(STDERR_FILENO, &st) ||
	    fstatat(STDERR_FILENO, "", &st, AT_EMPTY_PATH))
		_exit(10);
}

Test(seccomp, stat_not_relative_to_a_directory_descriptor)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs = everything;
	prepare = open_etc;
	for (size_t i = 0; i < NR_ROLES; i++) {
		role = every_role[i];
		expect_refused(stat_through_a_directory, (int)SYS_newfstatat, out, sizeof(out));
		expect_exit_0(stat_from_the_root_works);
	}
}

/* A blk worker runs the guest's disk requests: that and nothing else. */
/* Each test its own image: Criterion runs tests in parallel. */
static const char *disk_probe;
static int disk_fd = -1, efd = -1;

static void open_disk(void)
{
	disk_fd = open(disk_probe, O_RDWR | O_CLOEXEC);
	efd = eventfd(0, EFD_CLOEXEC);
	if (disk_fd < 0 || efd < 0)
		_exit(20);
}

static void disk_io_works(void)
{
	static uint8_t out[4096], in[4096];
	memset(out, 0x5a, sizeof(out));
	struct iovec o = {out, sizeof(out)}, i = {in, sizeof(in)};
	uint64_t one = 1;
	if (pwritev(disk_fd, &o, 1, 4096) != 4096 || preadv(disk_fd, &i, 1, 4096) != 4096 ||
	    memcmp(in, out, sizeof(in)) || fdatasync(disk_fd) ||
	    fallocate(disk_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) ||
	    write(efd, &one, sizeof(one)) != sizeof(one))
		_exit(10);
}

static void renice_the_victim(void)
{
	setpriority(PRIO_PROCESS, (id_t)victim, 19);
	_exit(9);
}

static void create_disk(void)
{
	int fd = open(disk_probe, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
}

Test(seccomp, blk_worker_role_does_disk_io_only)
{
	skip_under_sanitizers();
	char out[512];
	disk_probe = "/tmp/minivmm-seccomp-disk-role";
	create_disk();
	policy.needs = everything;
	role = SECCOMP_BLK_WORKER;
	start_victim();
	prepare = open_disk;
	int status = run_filtered(disk_io_works, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	expect_exit_0(read_shadow_fails);
	expect_refused(renice_the_victim, (int)SYS_setpriority, out, sizeof(out));
	expect_refused(open_a_socket, (int)SYS_socket, out, sizeof(out));
	expect_refused(unlink_probe, (int)SYS_unlinkat, out, sizeof(out));
	expect_refused(run_a_vcpu_ioctl, (int)SYS_ioctl, out, sizeof(out));
	stop_victim();
	unlink(disk_probe);
}

/* The real worker engine (blk_io.c): started before the filters, as in the VMM; once they are
 * armed, the worker that takes a request narrows itself first. */
static struct blk_image wimg;
static int worker_status[16];
static int nworker_status;

static void open_image_with_workers(void)
{
	char err[160];
	if (blk_image_open(&wimg, disk_probe, false, false, false, 0, err, sizeof(err)) ||
	    wimg.uring)
		_exit(20);
	DIR *d = opendir("/proc/self/task");
	const struct dirent *e;
	while (d && (e = readdir(d)) && nworker_status < 16) {
		char path[300];
		if (e->d_name[0] == '.' || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		worker_status[nworker_status++] = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (d)
		closedir(d);
	if (nworker_status != BLK_IO_WORKERS)
		_exit(21);
}

static void note_result(void *opaque, struct blk_io *io, int64_t res)
{
	(void)io;
	*(int64_t *)opaque = res;
}

static void one_request_narrows_a_worker(void)
{
	seccomp_arm_thread_filters(&policy);
	static uint8_t buf[4096];
	struct iovec iov = {buf, sizeof(buf)};
	struct blk_io io = {.op = BLK_IO_READ, .len = sizeof(buf), .iov = &iov, .iovcnt = 1};
	int64_t res = -1;
	blk_image_submit(&wimg, &io);
	blk_image_kick(&wimg);
	blk_image_drain(&wimg, note_result, &res);
	if (res != (int64_t)sizeof(buf))
		_exit(10);
	int narrowed = 0;
	for (int i = 0; i < nworker_status; i++) {
		char st[4096];
		ssize_t n = read(worker_status[i], st, sizeof(st) - 1);
		if (n > 0 && (st[n] = 0, strstr(st, "Seccomp_filters:\t2\n")))
			narrowed++;
	}
	if (narrowed != 1)
		_exit(11);
	blk_image_close(&wimg); /* the narrowed worker ends under its own filter */
}

Test(seccomp, blk_workers_narrow_before_the_first_request)
{
	skip_under_sanitizers();
	char out[512];
	disk_probe = "/tmp/minivmm-seccomp-disk-workers";
	create_disk();
	policy.needs = everything;
	prepare = open_image_with_workers;
	int status = run_filtered(one_request_narrows_a_worker, out, sizeof(out));
	unlink(disk_probe);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
}

/* Console input: stdin (here a pipe) to the UART, whose interrupt it raises. */
static int in_fd = -1;

static void open_input(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) || write(p[1], "k", 1) != 1)
		_exit(20);
	in_fd = p[0];
}

static void console_input_works(void)
{
	struct pollfd pfd = {.fd = in_fd, .events = POLLIN};
	char c;
	struct kvm_irq_level irq = {.irq = 4, .level = 1};
	if (poll(&pfd, 1, -1) != 1 || read(in_fd, &c, 1) != 1 || c != 'k' ||
	    ioctl(-1, KVM_IRQ_LINE, &irq) == 0 || errno != EBADF)
		_exit(10);
}

static void read_the_disk(void)
{
	char c;
	pread(STDERR_FILENO, &c, 1, 0);
	_exit(9);
}

Test(seccomp, console_input_role_reads_and_raises_irqs_only)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs = everything;
	role = SECCOMP_CONSOLE_IN;
	prepare = open_input;
	int status = run_filtered(console_input_works, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	prepare = NULL;
	expect_exit_0(read_shadow_fails);
	expect_refused(open_a_socket, (int)SYS_socket, out, sizeof(out));
	expect_refused(read_the_disk, (int)SYS_pread64, out, sizeof(out));
	expect_refused(run_a_vcpu_ioctl, (int)SYS_ioctl, out, sizeof(out));
}

static void populate_works(void)
{
	size_t len = 1 << 20;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, len, 23 /* MADV_POPULATE_WRITE */) || munmap(p, len))
		_exit(10);
}

static void renice_itself(void)
{
	setpriority(PRIO_PROCESS, 0, 19);
	_exit(9);
}

Test(seccomp, populate_role_faults_memory_in_only)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs = everything;
	role = SECCOMP_POPULATE;
	expect_exit_0(populate_works);
	expect_refused(renice_itself, (int)SYS_setpriority, out, sizeof(out));
	expect_refused(read_the_disk, (int)SYS_pread64, out, sizeof(out));
	expect_refused(open_a_socket, (int)SYS_socket, out, sizeof(out));
}

static void filter_every_thread(void)
{
	syscall(SYS_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 1 /* FLAG_TSYNC */, NULL);
	_exit(9);
}

Test(seccomp, a_thread_may_narrow_only_itself)
{
	skip_under_sanitizers();
	char out[512];
	expect_refused(filter_every_thread, (int)SYS_seccomp, out, sizeof(out));
}

/* The real pre-faulting thread (guest_mem.c), started once the filters are armed as in the
 * VMM: it lowers its priority, narrows itself, faults RAM in and ends, all without a refused
 * call. RAM is mapped before the filters, as in the VMM (its pagemap descriptor is opened
 * then, with capget and capset). */
static struct guest_mem populate_mem;

static void map_ram_to_populate(void)
{
	if (guest_mem_init(&populate_mem, 16ULL << 20, true, false))
		_exit(20);
}

static void populate_thread_runs_narrowed(void)
{
	seccomp_arm_thread_filters(&policy);
	guest_mem_start_populate(&populate_mem);
	guest_mem_destroy(&populate_mem);
}

Test(seccomp, populate_thread_runs_under_its_own_filter)
{
	skip_under_sanitizers();
	policy.needs = everything;
	prepare = map_ram_to_populate;
	expect_exit_0(populate_thread_runs_narrowed);
}
