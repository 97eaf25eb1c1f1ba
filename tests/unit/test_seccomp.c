/* The seccomp allow-lists: what a running VMM does still works (threads, memory, I/O, the KVM
 * ioctls), what it must never do (open a file for writing, exec, fork, inject keystrokes with
 * TIOCSTI, use sockets or io_uring it was not configured for, KVM_RUN outside a vCPU thread)
 * stops the process with status 1 and a line naming the call; reading a file fails with EACCES
 * (glibc may try).  Each case runs in a child of its
 * own: a filter cannot be removed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/seccomp.h"

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
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		if (prepare)
			prepare();
		char err[160];
		policy.on_violation = note_restore;
		if (seccomp_install(&policy, SECCOMP_PROCESS, err, sizeof(err)) ||
		    (role != SECCOMP_PROCESS && seccomp_install(&policy, role, err, sizeof(err)))) {
			ssize_t w = write(STDERR_FILENO, err, strlen(err));
			(void)w;
			_exit(42);
		}
		body();
		_exit(0);
	}
	close(pipefd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < outlen && (r = read(pipefd[0], out + n, outlen - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(pipefd[0]);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
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

#define UNLINK_PROBE "/tmp/minivmm-seccomp-unlink-test"

static void unlink_probe(void)
{
	unlinkat(AT_FDCWD, UNLINK_PROBE, 0);
	_exit(9);
}

static void unlink_works(void)
{
	if (unlinkat(AT_FDCWD, UNLINK_PROBE, 0))
		_exit(10);
}

static void create_probe(void)
{
	int fd = open(UNLINK_PROBE, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
}

Test(seccomp, unlink_only_on_the_main_thread_with_a_control_socket)
{
	skip_under_sanitizers();
	char out[512];
	create_probe();
	policy.needs = (struct seccomp_needs){.user_net = true, .control_socket = true};
	role = SECCOMP_IO;
	expect_refused(unlink_probe, (int)SYS_unlinkat, out, sizeof(out));
	role = SECCOMP_VCPU;
	expect_refused(unlink_probe, (int)SYS_unlinkat, out, sizeof(out));
	policy.needs.control_socket = false;
	role = SECCOMP_MAIN;
	expect_refused(unlink_probe, (int)SYS_unlinkat, out, sizeof(out));
	bool still_there = access(UNLINK_PROBE, F_OK) == 0;
	policy.needs.control_socket = true;
	int status = run_filtered(unlink_works, out, sizeof(out));
	bool removed = access(UNLINK_PROBE, F_OK) != 0;
	unlink(UNLINK_PROBE);
	cr_assert(still_there, "a refused unlink removed the file");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	cr_assert(removed);
}

static void open_resolv_conf(void)
{
	int fd = openat(AT_FDCWD, "/etc/hostname", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		_exit(10);
	close(fd);
}

static int etc_fd = -1;

static void open_etc(void)
{
	etc_fd = open("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void open_through_a_directory(void)
{
	openat(etc_fd, "hostname", O_RDONLY | O_CLOEXEC);
	_exit(9);
}

Test(seccomp, user_networking_reads_files_only_from_the_root)
{
	skip_under_sanitizers();
	char out[512];
	policy.needs = (struct seccomp_needs){.user_net = true};
	role = SECCOMP_IO;
	int status = run_filtered(open_resolv_conf, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, out);
	prepare = open_etc;
	expect_refused(open_through_a_directory, (int)SYS_openat, out, sizeof(out));
	prepare = NULL;
	expect_refused(open_for_writing, (int)SYS_openat, out, sizeof(out));
	role = SECCOMP_VCPU;
	expect_exit_0(read_only_open_fails);
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
