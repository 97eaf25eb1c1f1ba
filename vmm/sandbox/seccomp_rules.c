/*
 * The one seccomp policy: allow-lists, one per thread role (see seccomp.h), built from the
 * tables below: each entry says which roles use it and which configured device it is for, so a
 * VM without --net user has no socket calls and one without an io_uring disk no io_uring_enter.
 * No thread may open or create a file or a directory (read-only opens fail with EACCES; a
 * snapshot is written into files its client passes), unlink, or signal another process. ioctl is
 * allowed by request number: the KVM calls a running VM makes, TUNSETOFFLOAD, libslirp's FIONREAD
 * and the terminal get/set the console uses (never TIOCSTI). Set-up calls (KVM_CREATE_*, TUNSETIFF,
 * TUNSETSNDBUF, BLKGETSIZE64, opening files) happen before the filters and are not allowed at
 * all. Sockets, their options, madvise, fallocate and memory protection are allowed with the
 * arguments in arg_rules only: no socket but TCP, UDP and ICMP echo over IP, no descriptor
 * passing out, no executable memory. A refused call traps.
 *
 * Used twice: by tools/seccomp_gen.c at build time (the BPF of every role and needs, in
 * $(BUILD)/gen/seccomp_programs.c) and by vmm/sandbox/seccomp.c at run time when that cannot be
 * used.
 */
#include "seccomp_rules.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/if_tun.h>
#include <linux/io_uring.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Roles as bits. START: only in the process filter, i.e. every thread before it narrows itself
 * (naming, pinning, installing its own filter). */
enum {
	MAIN = 1 << SECCOMP_MAIN,
	VCPU = 1 << SECCOMP_VCPU,
	IO = 1 << SECCOMP_IO,
	START = 1 << SECCOMP_PROCESS,
	BLK = 1 << SECCOMP_BLK_WORKER,
	CONIN = 1 << SECCOMP_CONSOLE_IN,
	POP = 1 << SECCOMP_POPULATE,
	/* the VMM's own threads: descriptors, event loops, KVM */
	CORE = MAIN | VCPU | IO | START,
	/* every thread: locks, memory, signals, time, and reporting a refused call */
	ANY = CORE | BLK | CONIN | POP,
};

/* The device or option a rule is for. */
enum need { ALWAYS, USER_NET, TAP, IO_URING, CONTROL_SOCKET, VHOST_USER };

struct syscall_rule {
	const char *name;
	unsigned roles;
	enum need need;
};

/* Calls allowed whatever their arguments. Those in arg_rules, tgkill, fcntl, the stat family,
 * openat and the thread start-up calls have argument checks (add_rules). */
static const struct syscall_rule syscalls[] = {
    /* file descriptors: KVM, taps, eventfds, stdio; console input reads stdin */
    {"read", CORE | CONIN, ALWAYS},
    {"write", ANY, ALWAYS}, /* BLK: its completion eventfd; all: a refused call's report */
    {"readv", CORE, ALWAYS},
    {"writev", CORE, ALWAYS},
    {"lseek", CORE, ALWAYS},
    {"close", CORE, ALWAYS},
    {"fstat", ANY, ALWAYS}, /* stdio may look at stderr */
    /* the blk worker threads (no io_uring): the guest's requests on the image */
    {"pread64", BLK, ALWAYS},
    {"pwrite64", BLK, ALWAYS},
    {"preadv", BLK, ALWAYS},
    {"pwritev", BLK, ALWAYS},
    {"preadv2", BLK, ALWAYS},
    {"pwritev2", BLK, ALWAYS},
    {"fdatasync", BLK, ALWAYS},
    {"fsync", BLK, ALWAYS},
    /* a disk on io_uring: submitted from the I/O thread, drained on reset (vCPU) and at exit;
     * the ring itself only takes blk's opcodes (blk_io.c) */
    {"io_uring_enter", MAIN | VCPU | IO, IO_URING},
    /* event loop */
    {"epoll_wait", IO, ALWAYS},
    {"epoll_pwait", IO, ALWAYS},
    {"epoll_pwait2", IO, ALWAYS},
    {"epoll_ctl", MAIN | VCPU | IO, ALWAYS},
    {"poll", MAIN | IO | START | CONIN, ALWAYS},
    {"ppoll", MAIN | IO | START | CONIN, ALWAYS},
    {"eventfd2", MAIN | VCPU | IO, ALWAYS},
    {"timerfd_create", MAIN | VCPU | IO, ALWAYS},
    {"timerfd_settime", MAIN | VCPU | IO, ALWAYS},
    {"timerfd_gettime", MAIN | VCPU | IO, ALWAYS},
    /* threads, time */
    {"futex", ANY, ALWAYS},
    {"set_robust_list", START, ALWAYS},
    {"rseq", START, ALWAYS},
    {"exit", ANY, ALWAYS},
    {"exit_group", ANY, ALWAYS},
    {"gettid", ANY, ALWAYS},
    {"getpid", ANY, ALWAYS},
    {"sched_yield", ANY, ALWAYS},
    {"sched_getaffinity", MAIN | IO | START, ALWAYS}, /* IO: the control socket's status */
    {"sched_setaffinity", START, ALWAYS},
    {"setpriority", START, ALWAYS}, /* populate lowers its own priority, then narrows */
    {"nanosleep", ANY, ALWAYS},
    {"clock_nanosleep", ANY, ALWAYS},
    {"clock_gettime", ANY, ALWAYS},
    {"gettimeofday", ANY, ALWAYS},
    {"getrandom", CORE, ALWAYS},
    {"restart_syscall", ANY, ALWAYS},
    /* signals */
    {"rt_sigprocmask", ANY, ALWAYS},
    {"rt_sigreturn", ANY, ALWAYS},
    {"rt_sigaction", ANY, ALWAYS},
    {"sigaltstack", ANY, ALWAYS},
    /* memory (mmap, mprotect and madvise: arg_rules) */
    {"munmap", ANY, ALWAYS},
    {"brk", ANY, ALWAYS},
    {"mremap", ANY, ALWAYS},
    /* libslirp, on the I/O thread (socket, setsockopt, getsockopt: arg_rules); its sockets are
     * shut down at exit. No sendmsg, sendmmsg or recvmmsg: neither libslirp nor the control
     * socket sends with them, and sendmsg is how a descriptor would be passed out. */
    {"connect", IO, USER_NET},
    {"bind", IO, USER_NET},
    {"listen", IO, USER_NET},
    {"accept", IO, USER_NET},
    {"accept4", IO, USER_NET},
    {"shutdown", MAIN | IO, USER_NET},
    {"getsockname", IO, USER_NET},
    {"getpeername", IO, USER_NET},
    {"sendto", IO, USER_NET},
    {"recvfrom", IO, USER_NET},
    {"recvmsg", IO, USER_NET}, /* MSG_ERRQUEUE: a UDP flow's ICMP errors */
    /* the control socket's clients, on the I/O thread (its file is removed at exit by a
     * helper process, sock_reaper.c: no thread may unlink) */
    {"accept4", IO, CONTROL_SOCKET},
    {"sendto", IO, CONTROL_SOCKET},
    {"recvfrom", IO, CONTROL_SOCKET},
    /* its "snapshot": written into files the client created and passed (SCM_RIGHTS);
     * no thread creates a file or a directory */
    {"recvmsg", IO, CONTROL_SOCKET},
    {"ftruncate", IO, CONTROL_SOCKET},
    {"pwrite64", IO, CONTROL_SOCKET},
    {"fsync", IO, CONTROL_SOCKET},
    /* which pages of guest RAM never held data (mem_holes.c: /proc/self/pagemap, opened at
     * start) */
    {"pread64", IO, CONTROL_SOCKET},
    /* a vhost-user back end's replies are awaited on the vCPU thread that set the device's
     * status (DRIVER_OK hands the rings over, a reset takes them back); sendmsg and recvmsg:
     * arg_rules */
    {"poll", VCPU, VHOST_USER},
    {"ppoll", VCPU, VHOST_USER},
};

/* One argument compared as the kernel reads it: an int, 32 bits. */
#define ARG(n, value)                                                                              \
	{                                                                                          \
		.arg = (n), .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffu,                      \
		.datum_b = (uint32_t)(value)                                                       \
	}
/* A socket type, with or without SOCK_CLOEXEC and SOCK_NONBLOCK. */
#define SOCK_TYPE(type)                                                                            \
	{                                                                                          \
		.arg = 1, .op = SCMP_CMP_MASKED_EQ,                                                \
		.datum_a = 0xffffffffu & ~(uint32_t)(SOCK_CLOEXEC | SOCK_NONBLOCK),                \
		.datum_b = (type)                                                                  \
	}
/* A vhost-user back end's socket (SECCOMP_VHOST_USER_FD_BASE, ...). */
#define VHOST_USER_SOCKET                                                                          \
	{                                                                                          \
		.arg = 0, .op = SCMP_CMP_MASKED_EQ,                                                \
		.datum_a = 0xffffffffu & ~(uint32_t)(SECCOMP_VHOST_USER_FDS - 1),                  \
		.datum_b = SECCOMP_VHOST_USER_FD_BASE                                              \
	}
_Static_assert((SECCOMP_VHOST_USER_FDS & (SECCOMP_VHOST_USER_FDS - 1)) == 0 &&
		   SECCOMP_VHOST_USER_FD_BASE % SECCOMP_VHOST_USER_FDS == 0,
	       "one masked compare must match exactly the vhost-user descriptors");
/* Memory that is not executable. */
#define NO_EXEC                                                                                    \
	{                                                                                          \
		.arg = 2, .op = SCMP_CMP_MASKED_EQ, .datum_a = PROT_EXEC, .datum_b = 0             \
	}

/* Calls allowed (refuse_errno 0), or refused with an errno instead of a trap, only with these
 * arguments; the same call with other arguments traps. */
struct arg_rule {
	const char *name;
	unsigned roles;
	enum need need;
	int refuse_errno;
	unsigned argc;
	struct scmp_arg_cmp args[3];
};

static const struct arg_rule arg_rules[] = {
    /* libslirp's sockets: TCP and UDP over IPv4 and IPv6, and ICMP echo through an
     * unprivileged ping socket. No netlink, packet, vsock or raw socket. */
    {"socket", IO, USER_NET, 0, 3, {ARG(0, AF_INET), SOCK_TYPE(SOCK_STREAM), ARG(2, 0)}},
    {"socket", IO, USER_NET, 0, 3, {ARG(0, AF_INET), SOCK_TYPE(SOCK_DGRAM), ARG(2, 0)}},
    {"socket", IO, USER_NET, 0, 3, {ARG(0, AF_INET), SOCK_TYPE(SOCK_DGRAM), ARG(2, IPPROTO_ICMP)}},
    {"socket", IO, USER_NET, 0, 3, {ARG(0, AF_INET6), SOCK_TYPE(SOCK_STREAM), ARG(2, 0)}},
    {"socket", IO, USER_NET, 0, 3, {ARG(0, AF_INET6), SOCK_TYPE(SOCK_DGRAM), ARG(2, 0)}},
    /* Refused without stopping the VMM, as an honest one may try them: libslirp falls back
     * from a ping socket the host does not allow (net.ipv4.ping_group_range) to a raw one,
     * then to UDP echo; glib's log writer sends libslirp's warnings to the journal's Unix
     * socket when stderr is the journal (then writes them to stderr). No Unix socket, so no
     * connect by path or in the abstract namespace and no bind creating a file (the control
     * socket's own are bound already). */
    {"socket", IO, USER_NET, EACCES, 2, {ARG(0, AF_INET), SOCK_TYPE(SOCK_RAW)}},
    {"socket", IO, USER_NET, EACCES, 1, {ARG(0, AF_UNIX)}},
    /* the options libslirp sets, and no other (no filters, marks, devices or transparency) */
    {"setsockopt", IO, USER_NET, 0, 2, {ARG(1, SOL_SOCKET), ARG(2, SO_REUSEADDR)}},
    {"setsockopt", IO, USER_NET, 0, 2, {ARG(1, SOL_SOCKET), ARG(2, SO_OOBINLINE)}},
    {"setsockopt", IO, USER_NET, 0, 2, {ARG(1, IPPROTO_TCP), ARG(2, TCP_NODELAY)}},
    {"setsockopt", IO, USER_NET, 0, 2, {ARG(1, IPPROTO_IP), ARG(2, IP_TTL)}},
    {"setsockopt", IO, USER_NET, 0, 2, {ARG(1, IPPROTO_IP), ARG(2, IP_RECVERR)}},
    {"setsockopt", IO, USER_NET, 0, 2, {ARG(1, IPPROTO_IPV6), ARG(2, IPV6_V6ONLY)}},
    {"setsockopt", IO, USER_NET, 0, 2, {ARG(1, IPPROTO_IPV6), ARG(2, IPV6_UNICAST_HOPS)}},
    {"setsockopt", IO, USER_NET, 0, 2, {ARG(1, IPPROTO_IPV6), ARG(2, IPV6_RECVERR)}},
    /* libslirp: a connection's outcome; the control socket: its client's uid */
    {"getsockopt", IO, USER_NET, 0, 2, {ARG(1, SOL_SOCKET), ARG(2, SO_ERROR)}},
    {"getsockopt", IO, CONTROL_SOCKET, 0, 2, {ARG(1, SOL_SOCKET), ARG(2, SO_PEERCRED)}},
    /* No executable memory once set up: nothing is loaded after start-up (no file opens). */
    {"mmap", ANY, ALWAYS, 0, 1, {NO_EXEC}},
    {"mprotect", ANY, ALWAYS, 0, 1, {NO_EXEC}},
    /* The balloon and glibc (a thread's stack at its exit, a shrinking arena) give memory
     * back; the populate thread faults guest RAM in. Never MADV_HWPOISON, MADV_SOFT_OFFLINE
     * (host pages out of service), MADV_MERGEABLE (KSM: a side channel between VMs)... */
    {"madvise", ANY, ALWAYS, 0, 1, {ARG(2, MADV_DONTNEED)}},
    {"madvise", POP, ALWAYS, 0, 1, {ARG(2, MADV_POPULATE_WRITE)}},
    /* shared RAM (a vhost-user back end maps it): the balloon frees the memfd's pages */
    {"madvise", IO, VHOST_USER, 0, 1, {ARG(2, MADV_REMOVE)}},
    /* the vhost-user messages (devices/backends/vhost_user.c): on the back ends' sockets only,
     * with the flags the client uses; the memory table's memfd and the rings' eventfds are the
     * descriptors passed, to the back end and nowhere else */
    {"sendmsg", VCPU, VHOST_USER, 0, 2, {VHOST_USER_SOCKET, ARG(2, MSG_NOSIGNAL | MSG_DONTWAIT)}},
    {"recvmsg",
     VCPU,
     VHOST_USER,
     0,
     2,
     {VHOST_USER_SOCKET, ARG(2, MSG_DONTWAIT | MSG_CMSG_CLOEXEC)}},
    /* The guest's discard and write-zeroes (blk.c), these two modes only: none grows the file
     * (RLIMIT_FSIZE bounds those anyway, file_limit.h) or preallocates past its end
     * (KEEP_SIZE alone). */
    {"fallocate", BLK, ALWAYS, 0, 1, {ARG(1, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE)}},
    {"fallocate", BLK, ALWAYS, 0, 1, {ARG(1, FALLOC_FL_KEEP_SIZE | FALLOC_FL_ZERO_RANGE)}},
};

struct ioctl_rule {
	unsigned long request;
	unsigned roles;
	enum need need;
};

static const struct ioctl_rule ioctls[] = {
    {KVM_RUN, VCPU, ALWAYS},
    {KVM_GET_REGS, VCPU, ALWAYS}, /* the dump after a triple fault or internal error */
    {KVM_GET_SREGS, VCPU, ALWAYS},
    {KVM_TRANSLATE, VCPU, ALWAYS},
    {KVM_IRQ_LINE, VCPU | IO | CONIN, ALWAYS}, /* CONIN: console input raises COM1's IRQ */
    /* virtio-pci MSI-X and BAR programming (vCPU), device activation, teardown */
    {KVM_IRQFD, MAIN | VCPU | IO, ALWAYS},
    {KVM_IOEVENTFD, MAIN | VCPU | IO, ALWAYS},
    {KVM_SET_GSI_ROUTING, MAIN | VCPU | IO, ALWAYS},
    {TUNSETOFFLOAD, MAIN | VCPU | IO, TAP},
    /* the control socket's "snapshot" reads the paused VM's state (vmm/snapshot/snapshot.c) */
    {KVM_GET_REGS, IO, CONTROL_SOCKET},
    {KVM_GET_SREGS, IO, CONTROL_SOCKET},
    {KVM_GET_XSAVE, IO, CONTROL_SOCKET},
    {KVM_GET_XCRS, IO, CONTROL_SOCKET},
    {KVM_GET_MSRS, IO, CONTROL_SOCKET},
    {KVM_GET_MSR_INDEX_LIST, IO, CONTROL_SOCKET},
    {KVM_GET_LAPIC, IO, CONTROL_SOCKET},
    {KVM_GET_VCPU_EVENTS, IO, CONTROL_SOCKET},
    {KVM_GET_MP_STATE, IO, CONTROL_SOCKET},
    {KVM_GET_DEBUGREGS, IO, CONTROL_SOCKET},
    {KVM_GET_IRQCHIP, IO, CONTROL_SOCKET},
    {KVM_GET_PIT2, IO, CONTROL_SOCKET},
    {KVM_GET_CLOCK, IO, CONTROL_SOCKET},
    {FIONREAD, IO, USER_NET}, /* libslirp, UDP */
    /* the console's terminal: isatty, raw mode, restored on exit and on a refused call (any
     * thread) */
    {TCGETS, ANY, ALWAYS},
    {TCSETS, ANY, ALWAYS},
    {TCSETSW, ANY, ALWAYS},
    {TCSETSF, ANY, ALWAYS},
};

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

static bool needed(enum need need, const struct seccomp_needs *have)
{
	switch (need) {
	case USER_NET:
		return have->user_net;
	case TAP:
		return have->tap;
	case IO_URING:
		return have->io_uring;
	case CONTROL_SOCKET:
		return have->control_socket;
	case VHOST_USER:
		return have->vhost_user;
	case ALWAYS:
		break;
	}
	return true;
}

static int add_rules(scmp_filter_ctx ctx, const struct seccomp_needs *have, unsigned role,
		     uint32_t pid, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if ((syscalls[i].roles & role) && needed(syscalls[i].need, have) &&
		    add(ctx, SCMP_ACT_ALLOW, syscalls[i].name, 0, NULL, err, errlen))
			return -1;
	for (size_t i = 0; i < sizeof(arg_rules) / sizeof(arg_rules[0]); i++) {
		const struct arg_rule *r = &arg_rules[i];
		uint32_t action =
		    r->refuse_errno ? SCMP_ACT_ERRNO((uint32_t)r->refuse_errno) : SCMP_ACT_ALLOW;
		if ((r->roles & role) && needed(r->need, have) &&
		    add(ctx, action, r->name, r->argc, r->args, err, errlen))
			return -1;
	}
	for (size_t i = 0; i < sizeof(ioctls) / sizeof(ioctls[0]); i++) {
		if (!(ioctls[i].roles & role) || !needed(ioctls[i].need, have))
			continue;
		/* The kernel reads the request as 32 bits: compare those only. */
		const struct scmp_arg_cmp request =
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, ioctls[i].request);
		if (add(ctx, SCMP_ACT_ALLOW, "ioctl", 1, &request, err, errlen))
			return -1;
	}
	/* tx-uring=on: the I/O thread enables the tap's ring at its first use
	 * (tap_uring.c), which makes it the ring's one submitter; no other register call, no new
	 * ring. */
	const struct scmp_arg_cmp enable_rings =
	    SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)IORING_REGISTER_ENABLE_RINGS);
	if ((role & IO) && have->io_uring &&
	    add(ctx, SCMP_ACT_ALLOW, "io_uring_register", 1, &enable_rings, err, errlen))
		return -1;
	/* Signals only within this process: glibc's raise, abort and pthread_kill. The pid is
	 * the one runtime value in the rules (SECCOMP_AOT_PID in the programs built ahead). */
	const struct scmp_arg_cmp own_process = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)pid);
	if (add(ctx, SCMP_ACT_ALLOW, "tgkill", 1, &own_process, err, errlen))
		return -1;
	/* fcntl: the descriptor and status flags only (libslirp's O_NONBLOCK, close-on-exec),
	 * never F_SETOWN/F_SETSIG (signals to another process) or F_DUPFD. */
	static const int fcntl_cmds[] = {F_GETFD, F_SETFD, F_GETFL, F_SETFL};
	for (size_t i = 0; (role & CORE) && i < sizeof(fcntl_cmds) / sizeof(fcntl_cmds[0]); i++) {
		const struct scmp_arg_cmp cmd =
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, (uint32_t)fcntl_cmds[i]);
		if (add(ctx, SCMP_ACT_ALLOW, "fcntl", 1, &cmd, err, errlen))
			return -1;
	}
	/* The stat family: by path from the (possibly jailed) root or working directory, or on a
	 * descriptor itself (glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH)); not by a path
	 * relative to a directory descriptor. (A filter cannot read the path: with AT_EMPTY_PATH
	 * a non-empty one would still be resolved. What makes that harmless is that no directory
	 * descriptor stays open once set up, least of all one outside a --jail.) */
	const struct scmp_arg_cmp at_cwd =
	    SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, (uint32_t)AT_FDCWD);
	const struct scmp_arg_cmp fstatat_empty =
	    SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH);
	const struct scmp_arg_cmp statx_empty =
	    SCMP_A2(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH);
	if (add(ctx, SCMP_ACT_ALLOW, "newfstatat", 1, &at_cwd, err, errlen) ||
	    add(ctx, SCMP_ACT_ALLOW, "newfstatat", 1, &fstatat_empty, err, errlen) ||
	    add(ctx, SCMP_ACT_ALLOW, "statx", 1, &at_cwd, err, errlen) ||
	    add(ctx, SCMP_ACT_ALLOW, "statx", 1, &statx_empty, err, errlen))
		return -1;
	/* Files are opened at set-up only (libslirp's /etc/resolv.conf included: slirp.c). glibc
	 * may still read one later: its malloc reads /proc/sys/vm/overcommit_memory the first time
	 * a thread's arena shrinks, and takes EACCES as "do not shrink": reading is refused
	 * without stopping the VMM. Opening for writing traps. */
	const struct scmp_arg_cmp read_only =
	    SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY);
	if (add(ctx, SCMP_ACT_ERRNO(EACCES), "openat", 1, &read_only, err, errlen))
		return -1;
	if (!(role & START))
		return 0;
	const struct scmp_arg_cmp thread_only =
	    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
	const struct scmp_arg_cmp set_name = SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME);
	const struct scmp_arg_cmp no_new_privs = SCMP_A0(SCMP_CMP_EQ, PR_SET_NO_NEW_PRIVS);
	/* A thread narrowing itself: a plain filter on the calling thread (no TSYNC, no listener);
	 * a filter only ever restricts. */
	const struct scmp_arg_cmp own_filter[] = {SCMP_A0(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER),
						  SCMP_A1(SCMP_CMP_EQ, 0)};
	if (add(ctx, SCMP_ACT_ALLOW, "seccomp", 2, own_filter, err, errlen) ||
	    add(ctx, SCMP_ACT_ALLOW, "clone", 1, &thread_only, err, errlen) ||
	    add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err, errlen) ||
	    add(ctx, SCMP_ACT_ALLOW, "prctl", 1, &set_name, err, errlen) ||   /* thread names */
	    add(ctx, SCMP_ACT_ALLOW, "prctl", 1, &no_new_privs, err, errlen)) /* seccomp_load */
		return -1;
	return 0;
}

scmp_filter_ctx seccomp_rules_filter(const struct seccomp_needs *needs, enum seccomp_role role,
				     uint32_t pid, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx) {
		snprintf(err, errlen, "seccomp: cannot create a filter");
		return NULL;
	}
	bool whole_process = role == SECCOMP_PROCESS;
	int rc = whole_process ? seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) : 0;
	if (rc < 0) {
		snprintf(err, errlen, "seccomp: thread synchronisation: %s", strerror(-rc));
		goto fail;
	}
	if (add_rules(ctx, needs, whole_process ? ANY : 1u << role, pid, err, errlen))
		goto fail;
	return ctx;
fail:
	seccomp_release(ctx);
	return NULL;
}

int seccomp_rules_export(const struct seccomp_needs *needs, enum seccomp_role role, uint32_t pid,
			 struct sock_filter **insns, size_t *len, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_rules_filter(needs, role, pid, err, errlen);
	if (!ctx)
		return -1;
	int fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
	int rc = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	off_t size = rc < 0 ? -1 : lseek(fd, 0, SEEK_END);
	struct sock_filter *buf = size > 0 ? malloc((size_t)size) : NULL;
	if (rc < 0 || size <= 0 || size % (off_t)sizeof(*buf) || !buf ||
	    pread(fd, buf, (size_t)size, 0) != size) {
		snprintf(err, errlen, "seccomp: exporting the filter: %s",
			 strerror(rc < 0  ? -rc
				  : errno ? errno
					  : EIO));
		free(buf);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	*insns = buf;
	*len = (size_t)size / sizeof(*buf);
	return 0;
}
