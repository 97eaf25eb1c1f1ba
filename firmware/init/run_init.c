/* PID 1 of `minivmm run`'s guest (vmm/run/run.c): a static program in the initramfs minivmm
 * generates. It loads the drivers the run needs, builds the root (the host's directory through
 * virtio-fs, read-only, under a tmpfs overlay so the command may write anywhere), mounts the
 * shares, runs the command with its standard streams on virtio-console ports, and reports how
 * it ended through the VMM's exit port (0xf4): the status is never parsed from the output.
 *
 * Its instructions are /minivmm/run.conf: NUL-terminated "key=value" records (values may hold
 * anything but NUL): arg= (the command, in order), env=, cwd=, root= (the root's virtio-fs tag),
 * share=TAG:GUESTDIR:rw|ro, module= (file names under /minivmm/modules, in load order).
 * A failure of its own is one line on the stderr port (or the kernel log) and status 125. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/io.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_PORT     0xf4
#define STATUS_FAILED 125
#define MAX_ITEMS     4096
/* How long the drivers may take to show their devices (they probe asynchronously). */
#define DEVICE_WAIT_MS 10000

/* The virtio-console ports minivmm creates, found by name (vmm/run/run.c). */
#define PORT_STDOUT "minivmm.stdout"
#define PORT_STDERR "minivmm.stderr"
#define PORT_STDIN  "minivmm.stdin"

static int err_fd = -1;

static void report(int status)
{
	/* The VMM ends with this status the moment the byte is written. */
	if (ioperm(EXIT_PORT, 1, 1) == 0)
		outb((unsigned char)status, EXIT_PORT);
	reboot(RB_POWER_OFF); /* no port: the VMM says the command's status is unknown */
	for (;;)
		pause();
}

static _Noreturn void die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	/* The command's stderr once its port is open; before, the kernel's log at error level
	 * (shown on the console even with "quiet": minivmm run --console file=PATH). */
	if (err_fd >= 0) {
		dprintf(err_fd, "minivmm run: guest init: %.*s\n", n, msg);
	} else {
		int fd = open("/dev/kmsg", O_WRONLY);
		if (fd >= 0)
			dprintf(fd, "<3>minivmm run: guest init: %.*s\n", n, msg);
		fd = open("/dev/console", O_WRONLY | O_NOCTTY);
		if (fd >= 0)
			dprintf(fd, "minivmm run: guest init: %.*s\n", n, msg);
	}
	report(STATUS_FAILED);
	for (;;)
		;
}

static char *items[MAX_ITEMS];
static int nr_items;

static void read_config(void)
{
	int fd = open("/minivmm/run.conf", O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		die("no /minivmm/run.conf: %s", strerror(errno));
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size)
		die("cannot read /minivmm/run.conf");
	buf[st.st_size] = '\0';
	close(fd);
	for (char *p = buf; p < buf + st.st_size && nr_items < MAX_ITEMS; p += strlen(p) + 1)
		items[nr_items++] = p;
}

/* The values of key, in order, NULL-terminated, into out (max n). */
static int values(const char *key, char **out, int n)
{
	size_t k = strlen(key);
	int got = 0;
	for (int i = 0; i < nr_items && got < n - 1; i++)
		if (!strncmp(items[i], key, k) && items[i][k] == '=')
			out[got++] = items[i] + k + 1;
	out[got] = NULL;
	return got;
}

static const char *value(const char *key)
{
	char *v[2];
	return values(key, v, 2) ? v[0] : NULL;
}

static void mkdirs(const char *path)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
}

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags,
		       const char *data)
{
	mkdirs(dst);
	if (mount(src, dst, type, flags, data) < 0)
		die("mount %s (%s) on %s: %s", src, type, dst, strerror(errno));
}

static void load_modules(void)
{
	char *mods[256];
	values("module", mods, 256);
	for (int i = 0; mods[i]; i++) {
		char path[512];
		snprintf(path, sizeof(path), "/minivmm/modules/%s", mods[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("%s: %s", path, strerror(errno));
		if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
			die("loading %s: %s", mods[i], strerror(errno));
		close(fd);
	}
}

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The kernel's device events (add, and change when a port gets its name), opened before the
 * drivers load so none is missed: what the wait for the ports sleeps on. -1 if unavailable (the
 * wait then looks again every 10 ms). */
static int uevents = -1;

static void watch_uevents(void)
{
	uevents = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1};
	if (uevents >= 0 && bind(uevents, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(uevents);
		uevents = -1;
	}
}

/* The /dev path of the virtio-console port named name (/sys/class/virtio-ports/vportNpM/name:
 * the device's index N follows the probe order), or false. */
static bool find_port(const char *name, char *dev, size_t len)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *e;
	bool found = false;
	while (d && !found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[512], got[64];
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, got, sizeof(got) - 1);
		close(fd);
		if (n <= 0)
			continue;
		got[n] = '\0';
		got[strcspn(got, "\n")] = '\0';
		if (!strcmp(got, name)) {
			snprintf(dev, len, "/dev/%s", e->d_name);
			found = true;
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* Ports appear, and get their names, as the driver handles the device's control messages,
 * after its module load returned: look, and look again at each device event, bounded. */
static int open_port(const char *name, int flags)
{
	long long end = now_ms() + DEVICE_WAIT_MS;
	char dev[300];
	while (!find_port(name, dev, sizeof(dev))) {
		long long left = end - now_ms();
		if (left <= 0) {
			errno = ENOENT;
			return -1;
		}
		struct pollfd p = {.fd = uevents, .events = POLLIN};
		if (uevents < 0 || poll(&p, 1, (int)left) <= 0) {
			if (uevents >= 0)
				continue; /* the deadline: one last look */
			struct timespec t = {0, 10000000};
			nanosleep(&t, NULL);
			continue;
		}
		char buf[4096];
		while (recv(uevents, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			; /* what changed does not matter: look again */
	}
	/* devtmpfs makes the node as the port is added, before its name comes. */
	return open(dev, flags | O_CLOEXEC);
}

/* path is dir or below it. */
static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return path && !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* The root: the host's directory read-only, a tmpfs over it for whatever the command writes. */
static void build_root(void)
{
	const char *tag = value("root");
	if (!tag)
		die("no root= in run.conf");
	/* The first virtio-fs mount may come before the device is probed: retry briefly. */
	mkdirs("/lower");
	long long end = now_ms() + DEVICE_WAIT_MS;
	while (mount(tag, "/lower", "virtiofs", MS_RDONLY, NULL) < 0) {
		if ((errno != ENOENT && errno != ENODEV && errno != EINVAL) || now_ms() > end)
			die("mount virtiofs %s: %s", tag, strerror(errno));
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	must_mount("overlay-rw", "/rw", "tmpfs", 0, "mode=0755");
	mkdirs("/rw/upper");
	mkdirs("/rw/work");
	must_mount("overlay", "/newroot", "overlay", 0,
		   "lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work");
	must_mount("proc", "/newroot/proc", "proc", 0, NULL);
	must_mount("sys", "/newroot/sys", "sysfs", 0, NULL);
	must_mount("dev", "/newroot/dev", "devtmpfs", 0, NULL);
	/* A clean /tmp and /run, unless the command's working directory is in them (it must stay
	 * visible: the overlay makes it writable anyway). */
	const char *cwd = value("cwd");
	if (!under(cwd, "/tmp"))
		must_mount("tmp", "/newroot/tmp", "tmpfs", 0, "mode=1777");
	if (!under(cwd, "/run"))
		must_mount("run", "/newroot/run", "tmpfs", 0, "mode=0755");
	char *shares[64];
	values("share", shares, 64);
	for (int i = 0; shares[i]; i++) {
		char *s = shares[i], *dir = strchr(s, ':'),
		     *mode = dir ? strrchr(dir + 1, ':') : NULL;
		if (!dir || !mode)
			die("bad share= '%s'", s);
		*dir++ = '\0';
		*mode++ = '\0';
		char where[4096];
		snprintf(where, sizeof(where), "/newroot%s", dir);
		must_mount(s, where, "virtiofs", !strcmp(mode, "ro") ? MS_RDONLY : 0, NULL);
	}
}

int main(void)
{
	/* /dev first: the kernel's log (die's only way out until the ports are open). */
	mkdirs("/dev");
	mount("dev", "/dev", "devtmpfs", 0, NULL);
	must_mount("proc", "/proc", "proc", 0, NULL);
	must_mount("sys", "/sys", "sysfs", 0, NULL);
	read_config();
	watch_uevents();
	load_modules();
	err_fd = open_port(PORT_STDERR, O_WRONLY);
	int out = open_port(PORT_STDOUT, O_WRONLY);
	int in = open_port(PORT_STDIN, O_RDONLY);
	if (out < 0 || err_fd < 0 || in < 0)
		die("no virtio-console port for the command's streams: %s", strerror(errno));
	build_root();
	if (chdir("/newroot") < 0 || chroot(".") < 0)
		die("chroot: %s", strerror(errno));
	const char *cwd = value("cwd");
	if (cwd && chdir(cwd) < 0)
		die("cd %s: %s", cwd, strerror(errno));
	static char *argv[MAX_ITEMS], *envp[MAX_ITEMS];
	if (!values("arg", argv, MAX_ITEMS))
		die("no command");
	values("env", envp, MAX_ITEMS);
	pid_t child = fork();
	if (child < 0)
		die("fork: %s", strerror(errno));
	if (child == 0) {
		setsid();
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err_fd, 2) < 0)
			_exit(STATUS_FAILED);
		for (int i = 0; envp[i]; i++)
			putenv(envp[i]);
		execvp(argv[0], argv);
		dprintf(2, "minivmm run: %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	/* What the command wrote into shares is on the host before its status is. */
	sync();
	report(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}
