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
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "devices/backends/vhost_user.h"

/* How long virtiofsd may take to go once told. */
#define STOP_GRACE_MS 2000

/* The supervisor's descriptors, moved here before it closes every other one; virtiofsd gets
 * the listening socket as its descriptor 3 (--fd=3). */
enum { SUP_STOP = 3, SUP_DONE, SUP_LISTEN, SUP_LOG };
#define VIRTIOFSD_LISTEN_FD 3

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

static _Noreturn void supervisor_main(int stop, int done, int listener, const char *binary,
				      const char *dir, bool readonly)
{
	/* Terminal signals (Ctrl-C to the VMM's process group) are for the VMM: the supervisor
	 * and virtiofsd go when it does. */
	setpgid(0, 0);
	/* Out of the way first (either may sit on the other's number), then in place. */
	int hi_stop = fcntl(stop, F_DUPFD, 100), hi_done = fcntl(done, F_DUPFD, 100);
	int hi_listen = fcntl(listener, F_DUPFD, 100);
	int devnull = open("/dev/null", O_RDWR);
	if (hi_stop < 0 || hi_done < 0 || hi_listen < 0 || devnull < 0 ||
	    dup2(hi_stop, SUP_STOP) < 0 || dup2(hi_done, SUP_DONE) < 0 ||
	    dup2(hi_listen, SUP_LISTEN) < 0 || dup2(devnull, STDIN_FILENO) < 0 ||
	    dup2(devnull, STDOUT_FILENO) < 0)
		_exit(1);
	/* Nothing of the VMM's (KVM, images, the terminal as stdout) stays open here. */
	syscall(SYS_close_range, SUP_LISTEN + 1, ~0u, 0);
	int log[2];
	if (pipe(log) < 0 || (log[0] != SUP_LOG && dup2(log[0], SUP_LOG) < 0))
		sup_fail("pipe", errno);
	if (readonly && read_only_view(dir) < 0)
		sup_fail("readonly=on: a read-only bind mount of the directory", errno);
	char fd_arg[32], source_arg[4200];
	snprintf(fd_arg, sizeof(fd_arg), "--fd=%d", VIRTIOFSD_LISTEN_FD);
	snprintf(source_arg, sizeof(source_arg), "source=%s", dir);
	pid_t child = fork();
	if (child < 0)
		sup_fail("fork", errno);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the supervisor */
		if (dup2(log[1], STDERR_FILENO) < 0 || dup2(SUP_LISTEN, VIRTIOFSD_LISTEN_FD) < 0)
			_exit(127);
		syscall(SYS_close_range, VIRTIOFSD_LISTEN_FD + 1, ~0u, 0);
		execl(binary, binary, fd_arg, "-o", source_arg, "-o", "sandbox=chroot", "-o",
		      "cache=auto", "-o", "log_level=warn", (char *)NULL);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", binary, strerror(errno));
		_exit(127);
	}
	close(log[1]);
	if (log[0] != SUP_LOG)
		close(log[0]);
	close(SUP_LISTEN); /* virtiofsd's alone: its end ends the VMM's connection */
	supervise(child);
	_exit(0);
}

/* A listening socket at a path only this process can reach, and a connection to it: the
 * connection is made at once (it waits in the backlog for virtiofsd's accept), so nothing polls
 * for virtiofsd to listen; the path is gone before this returns. The connected socket, or -1
 * with a one-line reason in err. */
static int listen_and_connect(int *listener, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char dir[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(dir, sizeof(dir), "%s/minivmm-share-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(err, errlen, "--share: cannot make a directory for virtiofsd's socket: %s",
			 strerror(errno));
		return -1;
	}
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/vhost.sock", dir);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path) || lfd < 0 || cfd < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0 ||
	    connect(cfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "--share: virtiofsd's socket: %s",
			 n < 0 || (size_t)n >= sizeof(sa.sun_path) ? "path too long"
								   : strerror(errno));
		if (lfd >= 0)
			close(lfd);
		if (cfd >= 0)
			close(cfd);
		cfd = -1;
	} else {
		*listener = lfd;
	}
	unlink(sa.sun_path);
	rmdir(dir);
	return cfd;
}

struct vhost_user *virtiofsd_start(struct virtiofsd *d, const char *binary, const char *dir,
				   bool readonly, char *err, size_t errlen)
{
	*d = (struct virtiofsd){.supervisor = -1, .stop_fd = -1, .done_fd = -1};
	int listener = -1;
	int conn = listen_and_connect(&listener, err, errlen);
	if (conn < 0)
		return NULL;
	int stop[2], done[2];
	if (pipe2(stop, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "--share: pipe: %s", strerror(errno));
		close(conn);
		close(listener);
		return NULL;
	}
	if (pipe2(done, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "--share: pipe: %s", strerror(errno));
		close(stop[0]);
		close(stop[1]);
		close(conn);
		close(listener);
		return NULL;
	}
	pid_t pid = fork();
	if (pid == 0)
		supervisor_main(stop[0], done[1], listener, binary, dir, readonly);
	close(stop[0]);
	close(done[1]);
	close(listener);
	d->stop_fd = stop[1];
	d->done_fd = done[0];
	d->supervisor = pid;
	if (pid < 0) {
		snprintf(err, errlen, "--share: fork: %s", strerror(errno));
		close(conn);
		virtiofsd_stop(d, 0);
		return NULL;
	}
	struct vhost_user *vu = vhost_user_from_fd(conn, "virtiofsd");
	if (!vu) {
		snprintf(err, errlen, "--share: out of memory");
		virtiofsd_stop(d, STOP_GRACE_MS + 1000);
	}
	return vu;
}

/* Why virtiofsd is not there (its supervisor's last words), for a failed handshake. */
void virtiofsd_why(struct virtiofsd *d, char *out, size_t len)
{
	out[0] = '\0';
	struct pollfd p = {.fd = d->done_fd, .events = POLLIN};
	if (d->done_fd < 0 || poll(&p, 1, STOP_GRACE_MS) <= 0)
		return;
	ssize_t n = read(d->done_fd, out, len - 1);
	out[n > 0 ? n : 0] = '\0';
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
