/*
 * Seccomp allow-list. Installed once the VM is built (files, /dev/kvm, taps, disks, sockets
 * opened; guest loaded) and before the vCPU and I/O threads start, on every thread at once
 * (TSYNC); threads started later inherit it. What stays allowed is what running a guest
 * needs: KVM and device I/O (ioctl, read/write families, io_uring_enter), the event loop
 * (epoll, eventfd, timerfd), memory (mmap family, madvise for the balloon and pre-faulting),
 * threads (clone with CLONE_THREAD only; clone3 answers ENOSYS, so glibc falls back to
 * clone, whose flags a filter can see), the control socket and libslirp's sockets, the
 * fdatasync/fallocate of the blk worker fallback, read-only openat (glibc reads locale
 * data for strerror), and prctl(PR_SET_NAME) for thread names. Everything else (execve, fork,
 * ptrace, opening files for writing, mount, ...) traps: the process reports the call and exits.
 */
#include "seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static const char *const allowed[] = {
    /* KVM, taps, files, eventfds */
    "ioctl",
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "lseek",
    "close",
    "fstat",
    "newfstatat",
    "statx",
    "fcntl",
    "dup",
    "fdatasync",
    "fsync",
    "fallocate",
    "io_uring_enter",
    "io_uring_register",
    /* event loop */
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_ctl",
    "poll",
    "ppoll",
    "eventfd2",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    /* threads, time, scheduling */
    "futex",
    "set_robust_list",
    "rseq",
    "exit",
    "exit_group",
    "gettid",
    "getpid",
    "tgkill",
    "sched_yield",
    "sched_getaffinity",
    "sched_setaffinity",
    "setpriority",
    "getpriority",
    "nanosleep",
    "clock_nanosleep",
    "clock_gettime",
    "gettimeofday",
    "getrandom",
    "restart_syscall",
    /* signals */
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigaction",
    "sigaltstack",
    /* memory */
    "mmap",
    "munmap",
    "mprotect",
    "madvise",
    "brk",
    "mremap",
    /* control socket, libslirp */
    "socket",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "shutdown",
    "setsockopt",
    "getsockopt",
    "getsockname",
    "getpeername",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "unlink",
    "unlinkat",
};

static void (*violation_hook)(void);

/* Async-signal-safe decimal. */
static size_t format_uint(char *buf, unsigned long v)
{
	char tmp[24];
	size_t n = 0, i = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		buf[i++] = tmp[--n];
	return i;
}

static void on_sigsys(int sig, siginfo_t *info, void *uctx)
{
	(void)sig;
	(void)uctx;
	char msg[160];
	static const char head[] = "minivmm: seccomp refused system call ";
	static const char tail[] = "; this is a minivmm bug: please report it (--seccomp off "
				   "works around it)\n";
	size_t n = 0;
	memcpy(msg + n, head, sizeof(head) - 1);
	n += sizeof(head) - 1;
	n += format_uint(msg + n, (unsigned long)(unsigned)info->si_syscall);
	memcpy(msg + n, tail, sizeof(tail) - 1);
	n += sizeof(tail) - 1;
	ssize_t w = write(STDERR_FILENO, msg, n);
	(void)w;
	if (violation_hook)
		violation_hook();
	_exit(1);
}

bool seccomp_default_on(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return false;
#else
	return true;
#endif
#else
	return true;
#endif
}

static int add(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned argc,
	       const struct scmp_arg_cmp *args, char *err, size_t errlen)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* not a system call on this architecture */
	int rc = seccomp_rule_add_array(ctx, action, nr, argc, args);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp: adding %s: %s", name, strerror(-rc));
		return -1;
	}
	return 0;
}

int seccomp_install(void (*on_violation)(void), char *err, size_t errlen)
{
	violation_hook = on_violation;
	struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0) {
		snprintf(err, errlen, "seccomp: sigaction(SIGSYS): %s", strerror(errno));
		return -1;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx) {
		snprintf(err, errlen, "seccomp: cannot create a filter");
		return -1;
	}
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp: thread synchronisation: %s", strerror(-rc));
		goto fail;
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (add(ctx, SCMP_ACT_ALLOW, allowed[i], 0, NULL, err, errlen))
			goto fail;
	const struct scmp_arg_cmp thread_only =
	    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
	const struct scmp_arg_cmp set_name = SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME);
	const struct scmp_arg_cmp read_only =
	    SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY);
	if (add(ctx, SCMP_ACT_ALLOW, "clone", 1, &thread_only, err, errlen) ||
	    add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err, errlen) ||
	    add(ctx, SCMP_ACT_ALLOW, "openat", 1, &read_only, err, errlen) ||
	    add(ctx, SCMP_ACT_ALLOW, "prctl", 1, &set_name, err, errlen)) /* thread names */
		goto fail;
	if ((rc = seccomp_load(ctx)) < 0) {
		snprintf(err, errlen, "seccomp: loading the filter: %s", strerror(-rc));
		goto fail;
	}
	seccomp_release(ctx);
	return 0;
fail:
	seccomp_release(ctx);
	return -1;
}
