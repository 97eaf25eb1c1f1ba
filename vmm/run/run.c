#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "vmm/cli/cli.h"
#include "vmm/kvm/vm.h"
#include "vmm/vmm.h"
#include "initramfs.h"
#include "kmods.h"

/* The command's status when minivmm cannot tell it. */
#define RUN_TIMEOUT	   124
#define RUN_VM_ENDED	   125
#define RUN_MAX_SHARES	   8
#define RUN_DEFAULT_MEMORY "512M"
#define RUN_ROOT_TAG	   "root"

/* firmware/init/run_init.c, built static and embedded by the Makefile. */
extern const unsigned char run_init_blob[], run_init_blob_end[];

/* The drivers the guest needs (built in, or loaded by the init from the initramfs). */
static const char *const base_drivers[] = {"virtio_pci", "virtiofs", "overlay", "virtio_console"};

struct run_share {
	char host[PATH_MAX];
	char guest[PATH_MAX];
	bool readonly;
};

struct run_options {
	const char *kernel, *modules, *root, *memory, *cpus, *console, *virtiofsd, *append;
	bool net_user, timing;
	unsigned timeout_s;
	struct run_share shares[RUN_MAX_SHARES];
	int nr_shares;
	char **command;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: minivmm run --kernel BZIMAGE [options] [--] COMMAND [ARG...]\n"
	    "\n"
	    "Run COMMAND in a VM of that kernel, on the host's files, and exit with its status.\n"
	    "\n"
	    "  --kernel PATH       the guest kernel (a bzImage: its version picks the modules)\n"
	    "  --modules DIR       its modules (default: ROOT/lib/modules/VERSION)\n"
	    "  --root DIR          the guest's root, read-only under a tmpfs overlay (default /)\n"
	    "  --share HOST:GUEST[:ro]\n"
	    "                      mount host directory HOST at GUEST, read-write (or :ro)\n"
	    "  --memory SIZE       guest RAM (default " RUN_DEFAULT_MEMORY ")\n"
	    "  --cpus N            vCPUs (default 1)\n"
	    "  --net user          user-mode networking (the guest configures eth0 itself)\n"
	    "  --timeout SECS      stop the VM after SECS seconds: status 124\n"
	    "  --console OUTPUT    the kernel's messages (default none; e.g. stdio, file=PATH)\n"
	    "  --virtiofsd PATH    the virtiofsd to start (default: Debian's)\n"
	    "  --timing            report minivmm's start-up steps\n"
	    "\n"
	    "Exit status: COMMAND's; 128+N when signal N ended it; 124 on --timeout; 125 when\n"
	    "the VM ended before COMMAND did (a kernel panic); 2 for a usage or set-up error.\n");
}

/* One error line ("minivmm: error: run: ..."); -1. A path makes it long: no truncation check. */
static int bad(const char *fmt, const char *arg)
{
	char msg[PATH_MAX + 512];
	int n = snprintf(msg, sizeof(msg), fmt, arg);
	(void)n;
	log_error("run: %s", msg);
	return -1;
}

static int parse_share(struct run_options *o, const char *arg)
{
	if (o->nr_shares == RUN_MAX_SHARES)
		return bad("at most 8 --share%s", "");
	struct run_share *s = &o->shares[o->nr_shares];
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || colon[1] != '/')
		return bad("--share '%s': expected HOSTDIR:GUESTDIR[:ro] (GUESTDIR absolute)", arg);
	const char *mode = strchr(colon + 1, ':');
	s->readonly = mode && !strcmp(mode, ":ro");
	if (mode && !s->readonly)
		return bad("--share '%s': the only mode is :ro", arg);
	size_t gl = mode ? (size_t)(mode - colon - 1) : strlen(colon + 1);
	if ((size_t)(colon - arg) >= sizeof(s->host) || gl >= sizeof(s->guest))
		return bad("--share '%s': path too long", arg);
	memcpy(s->host, arg, (size_t)(colon - arg));
	s->host[colon - arg] = '\0';
	memcpy(s->guest, colon + 1, gl);
	s->guest[gl] = '\0';
	/* The host path travels in a --share option list, where a comma ends it. */
	if (strchr(s->host, ','))
		return bad("--share '%s': a host directory with a comma is not supported", arg);
	struct stat st;
	if (stat(s->host, &st) < 0)
		return bad("--share: '%s': no such directory", s->host);
	if (!S_ISDIR(st.st_mode))
		return bad("--share: '%s' is not a directory", s->host);
	o->nr_shares++;
	return 0;
}

enum {
	R_KERNEL = 256,
	R_MODULES,
	R_ROOT,
	R_SHARE,
	R_MEMORY,
	R_CPUS,
	R_NET,
	R_TIMEOUT,
	R_CONSOLE,
	R_VIRTIOFSD,
	R_TIMING,
	R_APPEND,
	R_HELP
};

/* 0: run; 1: --help; -1: a usage error (said). */
static int parse(int argc, char **argv, struct run_options *o)
{
	static const struct option opts[] = {
	    {"kernel", required_argument, NULL, R_KERNEL},
	    {"modules", required_argument, NULL, R_MODULES},
	    {"root", required_argument, NULL, R_ROOT},
	    {"share", required_argument, NULL, R_SHARE},
	    {"memory", required_argument, NULL, R_MEMORY},
	    {"cpus", required_argument, NULL, R_CPUS},
	    {"net", required_argument, NULL, R_NET},
	    {"timeout", required_argument, NULL, R_TIMEOUT},
	    {"console", required_argument, NULL, R_CONSOLE},
	    {"virtiofsd", required_argument, NULL, R_VIRTIOFSD},
	    {"timing", no_argument, NULL, R_TIMING},
	    {"append", required_argument, NULL, R_APPEND},
	    {"help", no_argument, NULL, R_HELP},
	    {NULL, 0, NULL, 0},
	};
	*o = (struct run_options){
	    .root = "/", .memory = RUN_DEFAULT_MEMORY, .cpus = "1", .console = "none"};
	optind = 0;
	opterr = 0;
	int c;
	/* '+': the first word that is not an option starts the command. */
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case R_KERNEL:
			o->kernel = optarg;
			break;
		case R_MODULES:
			o->modules = optarg;
			break;
		case R_ROOT:
			o->root = optarg;
			break;
		case R_SHARE:
			if (parse_share(o, optarg))
				return -1;
			break;
		case R_MEMORY:
			o->memory = optarg;
			break;
		case R_CPUS:
			o->cpus = optarg;
			break;
		case R_NET:
			if (strcmp(optarg, "user"))
				return bad("--net '%s': only user", optarg);
			o->net_user = true;
			break;
		case R_TIMEOUT: {
			char *end;
			errno = 0;
			unsigned long t = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || t == 0 || t > 86400 * 7)
				return bad("--timeout '%s': expected seconds, 1 to 604800", optarg);
			o->timeout_s = (unsigned)t;
			break;
		}
		case R_CONSOLE:
			/* Not stdio: the kernel's messages would join the command's stdout, and
			 * the console would take its stdin. */
			if (strcmp(optarg, "none") && strncmp(optarg, "file=", 5))
				return bad(
				    "--console '%s': none or file=PATH (the command has stdio)",
				    optarg);
			o->console = optarg;
			break;
		case R_VIRTIOFSD:
			o->virtiofsd = optarg;
			break;
		case R_APPEND:
			o->append = optarg;
			break;
		case R_TIMING:
			o->timing = true;
			break;
		case R_HELP:
			usage(stdout);
			return 1;
		default:
			return bad("unknown option '%s' (see minivmm run --help)",
				   argv[optind - 1]);
		}
	}
	if (!o->kernel)
		return bad("--kernel is required%s", "");
	if (optind >= argc)
		return bad("no command to run%s", "");
	o->command = argv + optind;
	struct stat st;
	if (strchr(o->root, ','))
		return bad("--root '%s': a directory with a comma is not supported", o->root);
	if (stat(o->root, &st) < 0 || !S_ISDIR(st.st_mode))
		return bad("--root '%s': no such directory", o->root);
	return 0;
}

/* run.conf: NUL-terminated "key=value" records (firmware/init/run_init.c). */
struct conf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void record(struct conf *c, const char *key, const char *value)
{
	size_t k = strlen(key), v = strlen(value), need = k + 1 + v + 1;
	if (c->failed)
		return;
	if (c->cap - c->len < need) {
		size_t cap = c->cap ? c->cap : 4096;
		while (cap - c->len < need)
			cap *= 2;
		char *p = realloc(c->p, cap);
		if (!p) {
			c->failed = true;
			return;
		}
		c->p = p;
		c->cap = cap;
	}
	memcpy(c->p + c->len, key, k);
	c->p[c->len + k] = '=';
	memcpy(c->p + c->len + k + 1, value, v + 1);
	c->len += need;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* The initramfs: the init, its run.conf and the modules, in a memfd; its path through
 * /proc/self/fd (what --initrd opens). 0, or -1 (said). */
static int build_initramfs(const struct run_options *o, char *path, size_t pathlen)
{
	char version[128], err[320], moddir[PATH_MAX];
	if (kmods_kernel_version(o->kernel, version, sizeof(version), err, sizeof(err)))
		return bad("%s", err);
	if (o->modules)
		snprintf(moddir, sizeof(moddir), "%s", o->modules);
	else
		snprintf(moddir, sizeof(moddir), "%s/lib/modules/%s",
			 strcmp(o->root, "/") ? o->root : "", version);
	const char *want[8];
	int nwant = 0;
	for (size_t i = 0; i < sizeof(base_drivers) / sizeof(base_drivers[0]); i++)
		want[nwant++] = base_drivers[i];
	if (o->net_user)
		want[nwant++] = "virtio_net";
	static struct kmods mods;
	if (kmods_resolve(moddir, want, nwant, &mods, err, sizeof(err)))
		return bad("%s", err);

	struct conf c = {0};
	record(&c, "root", RUN_ROOT_TAG);
	char cwd[PATH_MAX];
	if (!strcmp(o->root, "/") && getcwd(cwd, sizeof(cwd)))
		record(&c, "cwd", cwd);
	else
		record(&c, "cwd", "/");
	static const char *const keep_env[] = {"PATH", "HOME", "TERM", "LANG", "USER"};
	for (size_t i = 0; i < sizeof(keep_env) / sizeof(keep_env[0]); i++) {
		const char *v = getenv(keep_env[i]);
		char kv[4096];
		if (v && (size_t)snprintf(kv, sizeof(kv), "%s=%s", keep_env[i], v) < sizeof(kv))
			record(&c, "env", kv);
	}
	if (!getenv("PATH"))
		record(&c, "env",
		       "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	for (int i = 0; i < o->nr_shares; i++) {
		char share[PATH_MAX + 32];
		snprintf(share, sizeof(share), "share%d:%s:%s", i, o->shares[i].guest,
			 o->shares[i].readonly ? "ro" : "rw");
		record(&c, "share", share);
	}
	for (int i = 0; o->command[i]; i++)
		record(&c, "arg", o->command[i]);

	int fd = memfd_create("minivmm-run-initramfs", MFD_CLOEXEC);
	if (fd < 0)
		return bad("initramfs memfd: %s", strerror(errno));
	struct initramfs ir;
	initramfs_init(&ir, fd);
	initramfs_file(&ir, "init", 0755, run_init_blob,
		       (size_t)(run_init_blob_end - run_init_blob));
	initramfs_dir(&ir, "minivmm");
	initramfs_dir(&ir, "minivmm/modules");
	int rc = -1;
	for (int i = 0; i < mods.n; i++) {
		char mpath[PATH_MAX + 300], name[300];
		snprintf(mpath, sizeof(mpath), "%s/%s", moddir, mods.path[i]);
		int m = open(mpath, O_RDONLY | O_CLOEXEC);
		if (m < 0) {
			bad("cannot read module %s", mpath);
			goto out;
		}
		snprintf(name, sizeof(name), "minivmm/modules/%s", base_name(mods.path[i]));
		initramfs_file_from(&ir, name, 0644, m);
		close(m);
		record(&c, "module", base_name(mods.path[i]));
	}
	if (c.failed) {
		bad("out of memory%s", "");
		goto out;
	}
	initramfs_file(&ir, "minivmm/run.conf", 0644, c.p, c.len);
	if (initramfs_finish(&ir)) {
		bad("building the initramfs: %s", strerror(errno));
		goto out;
	}
	/* The loader opens it by this path (--initrd); the descriptor stays open until exit. */
	snprintf(path, pathlen, "/proc/self/fd/%d", fd); /* open until minivmm exits */
	rc = 0;
out:
	if (rc)
		close(fd);
	free(c.p);
	return rc;
}

/* The machine `minivmm` would be given on its command line for this run. */
#define MAX_ARGS 64

struct argv_builder {
	char *argv[MAX_ARGS];
	int argc;
	char store[MAX_ARGS][PATH_MAX + 64];
};

static void arg(struct argv_builder *b, const char *fmt, const char *value)
{
	if (b->argc >= MAX_ARGS - 1)
		return;
	snprintf(b->store[b->argc], sizeof(b->store[0]), fmt, value);
	b->argv[b->argc] = b->store[b->argc];
	b->argc++;
	b->argv[b->argc] = NULL;
}

/* The command's streams: ports 1, 2 and 3 of a virtio console, named, which the init opens
 * as /dev/vport0p1..3 (firmware/init/run_init.c); port 0 (hvc0) and COM1 carry the kernel's
 * messages to --console. */
static void add_stream_ports(struct argv_builder *b, const char *console)
{
	arg(b, "%s", "--console");
	arg(b, "virtio,%s", console);
	arg(b, "%s", "--vport");
	arg(b, "%s", "minivmm.stdout:stdout");
	arg(b, "%s", "--vport");
	arg(b, "%s", "minivmm.stderr:stderr");
	arg(b, "%s", "--vport");
	arg(b, "%s", "minivmm.stdin:stdin");
}

int run_main(int argc, char **argv, int64_t main_ns)
{
	struct run_options o;
	int p = parse(argc, argv, &o);
	if (p)
		return p > 0 ? 0 : EXIT_USAGE;
	char initrd[64];
	if (build_initramfs(&o, initrd, sizeof(initrd)))
		return EXIT_USAGE;
	static struct argv_builder b;
	b.argc = 0;
	arg(&b, "%s", "minivmm");
	arg(&b, "%s", "--quiet"); /* the command's stderr is minivmm's: only errors join it */
	arg(&b, "%s", "--kernel");
	arg(&b, "%s", o.kernel);
	arg(&b, "%s", "--initrd");
	arg(&b, "%s", initrd);
	arg(&b, "%s", "--cmdline");
	char cmdline[PATH_MAX];
	snprintf(cmdline, sizeof(cmdline), "console=ttyS0 quiet panic=-1 rdinit=/init%s%s",
		 o.append ? " " : "", o.append ? o.append : "");
	arg(&b, "%s", cmdline);
	arg(&b, "%s", "--memory");
	arg(&b, "%s", o.memory);
	arg(&b, "%s", "--cpus");
	arg(&b, "%s", o.cpus);
	arg(&b, "%s", "--share");
	arg(&b, "path=%s,tag=" RUN_ROOT_TAG ",readonly", o.root);
	for (int i = 0; i < o.nr_shares; i++) {
		char spec[PATH_MAX + 64];
		snprintf(spec, sizeof(spec), "path=%s,tag=share%d%s", o.shares[i].host, i,
			 o.shares[i].readonly ? ",readonly" : "");
		arg(&b, "%s", "--share");
		arg(&b, "%s", spec);
	}
	if (o.net_user) {
		arg(&b, "%s", "--net");
		arg(&b, "%s", "user");
	}
	if (o.virtiofsd) {
		arg(&b, "%s", "--virtiofsd");
		arg(&b, "%s", o.virtiofsd);
	}
	if (o.timing)
		arg(&b, "%s", "--timing");
	add_stream_ports(&b, o.console);
	struct vm_config cfg;
	char err[256];
	optind = 0; /* getopt starts afresh */
	if (cli_parse(b.argc, b.argv, &cfg, err, sizeof(err)) != CLI_RUN) {
		log_error("run: %s", err);
		cli_free_config(&cfg);
		return EXIT_USAGE;
	}
	if (o.timeout_s) {
		/* Blocked now: minivmm reads it (signalfd) as a stop, never dies of it. */
		sigset_t alrm;
		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &alrm, NULL);
		alarm(o.timeout_s);
	}
	struct vmm_outcome out = {.quiet_status = true};
	int status = vmm_boot(&cfg, main_ns, &out);
	cli_free_config(&cfg);
	if (out.by_guest)
		return status;
	if (!out.ran)
		return EXIT_USAGE;
	if (o.timeout_s && status == 128 + SIGALRM) {
		log_error("run: the command did not end within %u s", o.timeout_s);
		return RUN_TIMEOUT;
	}
	if (status > 128 && status < 128 + 65)
		return status; /* minivmm itself was stopped by a signal */
	log_error("run: the VM ended before the command did (%s)",
		  status == EXIT_TRIPLE_FAULT ? "a triple fault"
		  : status == EXIT_GUEST_RESET
		      ? "the guest rebooted or powered off: a kernel panic?"
		      : "minivmm's error above");
	return RUN_VM_ENDED;
}
