#include "virtiofsd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "devices/backends/vhost_user.h"

/* How long virtiofsd may take to listen, and to go once told. */
#define START_TIMEOUT_MS 10000
#define STOP_GRACE_MS	 2000

/* The supervisor's descriptors, moved here before it closes every other one. */
enum { SUP_STOP = 3, SUP_DONE, SUP_LOG };

static const char *const known_places[] = {
    "/usr/lib/qemu/virtiofsd", /* Debian, Ubuntu: qemu-system-common */
    "/usr/libexec/virtiofsd",  /* Fedora, Arch: the virtiofsd package */
    "/usr/lib/virtiofsd",
    NULL,
};

const char *virtiofsd_find(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	if (path) {
		if (access(path, X_OK) == 0)
			return path;
		snprintf(err, errlen, "--virtiofsd: cannot run '%s': %s", path, strerror(errno));
		return NULL;
	}
	for (int i = 0; known_places[i]; i++)
		if (access(known_places[i], X_OK) == 0)
			return known_places[i];
	const char *env = getenv("PATH");
	for (const char *p = env; p && *p;) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		int w = snprintf(buf, len, "%.*s/virtiofsd", (int)n, p);
		if (n && w > 0 && (size_t)w < len && access(buf, X_OK) == 0)
			return buf;
		p += n + (end ? 1 : 0);
	}
	snprintf(err, errlen,
		 "--share: virtiofsd not found (install qemu-system-common, or give --virtiofsd "
		 "PATH)");
	return NULL;
}

/* virtiofsd's lines that say nothing wrong: every session's end prints them. */
static bool noise(const char *line)
{
	return strstr(line, "fv_remove_watch: TODO") || strstr(line, "Unexpected poll revents");
}

/* Pass virtiofsd's messages on, line by line, less the noise. False at end of file. */
static bool forward_log(char *buf, size_t cap, size_t *used)
{
	ssize_t n = read(SUP_LOG, buf + *used, cap - 1 - *used);
	if (n <= 0)
		return false;
	*used += (size_t)n;
	buf[*used] = '\0';
	char *line = buf, *nl;
	while ((nl = strchr(line, '\n'))) {
		*nl = '\0';
		if (!noise(line))
			dprintf(STDERR_FILENO, "minivmm: virtiofsd: %s\n", line);
		line = nl + 1;
	}
	*used = strlen(line);
	memmove(buf, line, *used);
	if (*used == cap - 1)
		*used = 0; /* a line longer than the buffer: dropped */
	return true;
}

/* The supervisor's life: until the VMM's end of the stop pipe closes or virtiofsd ends. */
static void supervise(pid_t child)
{
	char buf[1024];
	size_t used = 0;
	bool log_open = true;
	for (;;) {
		struct pollfd p[2] = {{.fd = SUP_STOP, .events = POLLIN},
				      {.fd = log_open ? SUP_LOG : -1, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break; /* the VM ended (end of file) */
		if (p[1].revents && !forward_log(buf, sizeof(buf), &used)) {
			log_open = false; /* virtiofsd is gone or going */
			break;
		}
	}
	int status;
	if (waitpid(child, &status, WNOHANG) == 0) {
		kill(child, SIGTERM);
		int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		if (pidfd < 0 || poll(&p, 1, STOP_GRACE_MS) <= 0)
			kill(child, SIGKILL);
	}
	waitpid(child, &status, 0);
	while (log_open && forward_log(buf, sizeof(buf), &used))
		;
}

/* A read-only view of dir for virtiofsd alone: a mount namespace of its own, where dir is
 * bound onto itself and made read-only with every mount below it (a share of / must not leave
 * /home or /tmp writable). 0, or -1 with errno. */
static int read_only_view(const char *dir)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(dir, dir, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	if (syscall(SYS_mount_setattr, AT_FDCWD, dir, AT_RECURSIVE, &attr, sizeof(attr)) == 0)
		return 0;
	/* Before Linux 5.12: the top mount only. */
	return mount(NULL, dir, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
}

/* In the supervisor: report why it cannot go on (the VMM prints it) and end. */
static _Noreturn void sup_fail(const char *what, int e)
{
	dprintf(SUP_DONE, "%s: %s", what, strerror(e));
	_exit(1);
}

static _Noreturn void supervisor_main(int stop, int done, const char *binary, const char *dir,
				      const char *sock, bool readonly)
{
	/* Terminal signals (Ctrl-C to the VMM's process group) are for the VMM: the supervisor
	 * and virtiofsd go when it does. */
	setpgid(0, 0);
	/* Out of the way first (either may sit on the other's number), then in place. */
	int hi_stop = fcntl(stop, F_DUPFD, 100), hi_done = fcntl(done, F_DUPFD, 100);
	int devnull = open("/dev/null", O_RDWR);
	if (hi_stop < 0 || hi_done < 0 || devnull < 0 || dup2(hi_stop, SUP_STOP) < 0 ||
	    dup2(hi_done, SUP_DONE) < 0 || dup2(devnull, STDIN_FILENO) < 0 ||
	    dup2(devnull, STDOUT_FILENO) < 0)
		_exit(1);
	/* Nothing of the VMM's (KVM, images, the terminal as stdout) stays open here. */
	syscall(SYS_close_range, SUP_DONE + 1, ~0u, 0);
	int log[2];
	if (pipe(log) < 0 || (log[0] != SUP_LOG && dup2(log[0], SUP_LOG) < 0))
		sup_fail("pipe", errno);
	if (readonly && read_only_view(dir) < 0)
		sup_fail("readonly=on: a read-only bind mount of the directory", errno);
	char sock_arg[320], source_arg[4200];
	snprintf(sock_arg, sizeof(sock_arg), "--socket-path=%s", sock);
	snprintf(source_arg, sizeof(source_arg), "source=%s", dir);
	pid_t child = fork();
	if (child < 0)
		sup_fail("fork", errno);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the supervisor */
		dup2(log[1], STDERR_FILENO);
		syscall(SYS_close_range, 3, ~0u, 0);
		execl(binary, binary, sock_arg, "-o", source_arg, "-o", "sandbox=chroot", "-o",
		      "cache=auto", "-o", "log_level=warn", (char *)NULL);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", binary, strerror(errno));
		_exit(127);
	}
	close(log[1]);
	if (log[0] != SUP_LOG)
		close(log[0]);
	supervise(child);
	_exit(0);
}

/* virtiofsd's pid file for a socket path (it keeps one per path, and leaves it behind). */
static void remove_pid_file(const char *sock)
{
	char name[400];
	int n = snprintf(name, sizeof(name), "/run/virtiofsd/%s.pid", sock);
	if (n < 0 || (size_t)n >= sizeof(name))
		return;
	for (char *p = name + strlen("/run/virtiofsd/"); *p; p++)
		if (*p == '/')
			*p = '.';
	unlink(name);
}

struct vhost_user *virtiofsd_start(struct virtiofsd *d, const char *binary, const char *dir,
				   bool readonly, char *err, size_t errlen)
{
	*d = (struct virtiofsd){.supervisor = -1, .stop_fd = -1, .done_fd = -1};
	const char *tmp = getenv("TMPDIR");
	char sock_dir[256], sock[300];
	snprintf(sock_dir, sizeof(sock_dir), "%s/minivmm-share-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(sock_dir)) {
		snprintf(err, errlen, "--share: cannot make a directory for virtiofsd's socket: %s",
			 strerror(errno));
		return NULL;
	}
	snprintf(sock, sizeof(sock), "%s/vhost.sock", sock_dir);
	int stop[2], done[2];
	if (pipe2(stop, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "--share: pipe: %s", strerror(errno));
		rmdir(sock_dir);
		return NULL;
	}
	if (pipe2(done, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "--share: pipe: %s", strerror(errno));
		close(stop[0]);
		close(stop[1]);
		rmdir(sock_dir);
		return NULL;
	}
	pid_t pid = fork();
	if (pid == 0)
		supervisor_main(stop[0], done[1], binary, dir, sock, readonly);
	close(stop[0]);
	close(done[1]);
	d->stop_fd = stop[1];
	d->done_fd = done[0];
	d->supervisor = pid;
	struct vhost_user *vu = NULL;
	if (pid < 0) {
		snprintf(err, errlen, "--share: fork: %s", strerror(errno));
		goto out;
	}
	/* Until it listens (or ends): a connection try every 10 ms, woken early by its end. */
	uint64_t deadline = clock_monotonic_ns() + (uint64_t)START_TIMEOUT_MS * 1000000;
	for (;;) {
		char why[160];
		vu = vhost_user_connect(sock, 0, why, sizeof(why));
		if (vu)
			break;
		struct pollfd p = {.fd = d->done_fd, .events = POLLIN};
		if (poll(&p, 1, 10) > 0) {
			char msg[256] = "";
			ssize_t n = read(d->done_fd, msg, sizeof(msg) - 1);
			msg[n > 0 ? n : 0] = '\0';
			snprintf(err, errlen, "--share: virtiofsd ended before it listened%s%s",
				 n > 0 ? ": " : " (its messages are above)", msg);
			break;
		}
		if (clock_monotonic_ns() > deadline) {
			snprintf(err, errlen, "--share: virtiofsd did not listen within %d s",
				 START_TIMEOUT_MS / 1000);
			break;
		}
	}
out:
	unlink(sock);
	rmdir(sock_dir);
	remove_pid_file(sock);
	if (!vu)
		virtiofsd_stop(d, STOP_GRACE_MS + 1000);
	return vu;
}

void virtiofsd_stop(struct virtiofsd *d, int timeout_ms)
{
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	d->stop_fd = -1;
	if (d->done_fd >= 0) {
		char c;
		struct pollfd p = {.fd = d->done_fd, .events = POLLIN};
		while (poll(&p, 1, timeout_ms) > 0 && read(d->done_fd, &c, 1) > 0)
			;
		close(d->done_fd);
	}
	d->done_fd = -1;
	/* Not reaped: no VMM thread may wait for a process (seccomp); it is gone already, and
	 * its entry goes with the VMM's. */
	d->supervisor = -1;
}
