#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmm/kinds/device_registry.h"
#include "vmm/sandbox/jail.h"
#include "options.h"
#include "vport.h"
#include "vmm/sandbox/seccomp.h"
#include "base/log.h"
#include "base/startup_timing.h"

#define MIN_MEMORY (16ULL << 20)
#define MAX_MEMORY (1ULL << 40)

static int fail(char *err, size_t errlen, const char *fmt, const char *arg)
{
	snprintf(err, errlen, fmt, arg);
	return -1;
}

int parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
	if (!s || !isdigit((unsigned char)s[0]))
		return fail(err, errlen, "invalid size '%s' (expected e.g. 512M or 2G)",
			    s ? s : "");
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return fail(err, errlen, "size '%s' is too large", s);
	unsigned shift = 20; /* bare numbers are MiB */
	if (*end) {
		switch (toupper((unsigned char)*end)) {
		case 'K':
			shift = 10;
			break;
		case 'M':
			shift = 20;
			break;
		case 'G':
			shift = 30;
			break;
		case 'T':
			shift = 40;
			break;
		default:
			return fail(err, errlen, "invalid size suffix in '%s' (use K, M, G or T)",
				    s);
		}
		end++;
		/* Accept "512M", "512MB", "512MiB". */
		if (!strcmp(end, "B") || !strcmp(end, "iB") || !strcmp(end, "b"))
			end += strlen(end);
		if (*end)
			return fail(err, errlen, "invalid size '%s'", s);
	}
	if (v > (UINT64_MAX >> shift))
		return fail(err, errlen, "size '%s' is too large", s);
	*out = (uint64_t)v << shift;
	return 0;
}

/* file=PATH[,max-size=SIZE]: the last ",max-size=" ends the path (a path may hold commas). */
static int parse_console_file(struct vm_config *cfg, const char *arg, char *err, size_t errlen)
{
	static const char opt[] = ",max-size=";
	const char *max = NULL;
	for (const char *p = strstr(arg, opt); p; p = strstr(p + 1, opt))
		max = p;
	cfg->console = CONSOLE_FILE;
	cfg->console_max_bytes = CONSOLE_FILE_DEFAULT_MAX;
	cfg->console_path = arg;
	cfg->console_path_len = max ? (size_t)(max - arg) : strlen(arg);
	if (!max)
		return 0;
	if (max == arg)
		return fail(err, errlen, "invalid --console file=%s (no path)", arg);
	return parse_size(max + strlen(opt), &cfg->console_max_bytes, err, errlen);
}

static int parse_cpu_number(const char **p, int max_cpus, long *out, char *err, size_t errlen)
{
	if (!isdigit((unsigned char)**p))
		return fail(err, errlen, "invalid CPU list near '%s'", *p);
	char *end;
	errno = 0;
	long v = strtol(*p, &end, 10);
	if (errno || v >= max_cpus) {
		snprintf(err, errlen, "host CPU %.20s does not exist (this host has CPUs 0-%d)", *p,
			 max_cpus - 1);
		return -1;
	}
	*out = v;
	*p = end;
	return 0;
}

int parse_cpu_list(const char *s, int max_cpus, cpu_set_t *set, char *err, size_t errlen)
{
	CPU_ZERO(set);
	if (!s || !*s)
		return fail(err, errlen, "empty CPU list%s", "");
	if (max_cpus > CPU_SETSIZE)
		max_cpus = CPU_SETSIZE;
	const char *p = s;
	for (;;) {
		long lo, hi;
		if (parse_cpu_number(&p, max_cpus, &lo, err, errlen))
			return -1;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_cpu_number(&p, max_cpus, &hi, err, errlen))
				return -1;
			if (hi < lo)
				return fail(err, errlen, "invalid CPU range in '%s'", s);
		}
		for (long c = lo; c <= hi; c++)
			CPU_SET(c, set);
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return fail(err, errlen, "invalid CPU list '%s'", s);
		p++;
	}
}

int parse_pin_list(const char *s, int nr_vcpus, int max_host_cpus, struct vm_config *cfg, char *err,
		   size_t errlen)
{
	char *copy = strdup(s ? s : "");
	if (!copy)
		return fail(err, errlen, "out of memory%s", "");
	int rc = -1;
	char *save = NULL;
	size_t n = strlen(copy);
	if (n && (copy[0] == ',' || copy[n - 1] == ',' || strstr(copy, ",,"))) {
		fail(err, errlen, "invalid --pin value '%s' (empty entry)", s);
		goto out;
	}
	/* Regroup comma-separated tokens: a token without '=' continues the previous cpulist. */
	char *tok = strtok_r(copy, ",", &save);
	if (!tok) {
		fail(err, errlen, "empty --pin value%s", "");
		goto out;
	}
	while (tok) {
		char *eq = strchr(tok, '=');
		if (!eq || eq == tok) {
			fail(err, errlen, "invalid --pin entry '%s' (expected VCPU=CPULIST)", tok);
			goto out;
		}
		*eq = '\0';
		char *end;
		errno = 0;
		long vcpu = strtol(tok, &end, 10);
		if (errno || *end || !isdigit((unsigned char)tok[0])) {
			fail(err, errlen, "invalid vCPU number '%s' in --pin", tok);
			goto out;
		}
		if (vcpu >= nr_vcpus) {
			snprintf(err, errlen, "--pin names vCPU %ld but the VM has %d vCPU(s)",
				 vcpu, nr_vcpus);
			goto out;
		}
		if (cfg->pinned[vcpu]) {
			snprintf(err, errlen, "vCPU %ld is pinned twice", vcpu);
			goto out;
		}
		char list[256];
		snprintf(list, sizeof(list), "%s", eq + 1);
		tok = strtok_r(NULL, ",", &save);
		while (tok && !strchr(tok, '=')) {
			size_t used = strlen(list);
			if (used + 1 + strlen(tok) >= sizeof(list)) {
				fail(err, errlen, "CPU list for --pin is too long%s", "");
				goto out;
			}
			list[used] = ',';
			strcpy(list + used + 1, tok);
			tok = strtok_r(NULL, ",", &save);
		}
		if (parse_cpu_list(list, max_host_cpus, &cfg->pin_sets[vcpu], err, errlen))
			goto out;
		cfg->pinned[vcpu] = true;
	}
	rc = 0;
out:
	free(copy);
	return rc;
}

void format_cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, set))
			continue;
		int end = c;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
			end++;
		int n = end > c
			    ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, end)
			    : snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += n;
		c = end;
	}
}

/* A device flag ("--rng", "--net", ...): transport= is common to all, the rest is the
 * device's own and goes to its parser. */
static int parse_device(const struct device_kind_desc *kind, const char *arg, struct vm_config *cfg,
			char *err, size_t errlen)
{
	char what[32];
	snprintf(what, sizeof(what), "--%s", kind->flag);
	if (cfg->nr_devices == MAX_DEVICES)
		return fail(err, errlen, "too many devices (at most %s)", "16");
	if (kind->needs_options && (!arg || !*arg))
		return fail(err, errlen, "%s needs options (see --help)", what);
	/* "--share DIR,tag=x": a first entry without '=' is the value of the kind's positional
	 * option (a path may be longer than a key, or hold what a key may not). */
	char named[OPTIONS_MAX * (OPTION_KEY_MAX + OPTION_VALUE_MAX)];
	const char *list = arg;
	if (kind->positional && arg && *arg &&
	    strncmp(arg, kind->positional, strlen(kind->positional))) {
		size_t first = strcspn(arg, ",");
		if (!memchr(arg, '=', first)) {
			int n = snprintf(named, sizeof(named), "%s%s", kind->positional, arg);
			if (n < 0 || (size_t)n >= sizeof(named))
				return fail(err, errlen, "%s: options too long", what);
			list = named;
		}
	}
	struct option_list opts;
	if (options_split(list, what, &opts, err, errlen))
		return -1;
	struct device_config *d = &cfg->devices[cfg->nr_devices];
	*d = (struct device_config){
	    .kind = kind, .transport = TRANSPORT_PCI, .spec = arg ? arg : ""};
	/* Pass on everything but transport=, in the order given. */
	int kept = 0;
	for (int i = 0; i < opts.n; i++) {
		const struct option_kv *kv = &opts.kv[i];
		if (!strcmp(kv->key, "transport")) {
			if (!strcmp(kv->value, "pci"))
				d->transport = TRANSPORT_PCI;
			else if (!strcmp(kv->value, "mmio"))
				d->transport = TRANSPORT_MMIO;
			else
				return fail(err, errlen,
					    "invalid transport '%s' (expected mmio or pci)",
					    kv->value);
			continue;
		}
		if (kept != i)
			opts.kv[kept] = *kv;
		kept++;
	}
	opts.n = kept;
	/* On success the configuration owns *parsed (cli_free_config). */
	if (kind->parse(&opts, &d->parsed, err, errlen))
		return -1;
	cfg->nr_devices++;
	return 0;
}

int cli_add_device(struct vm_config *cfg, const char *flag, const char *spec, char *err,
		   size_t errlen)
{
	for (int k = 0; device_kinds[k]; k++)
		if (!strcmp(device_kinds[k]->flag, flag))
			return parse_device(device_kinds[k], spec, cfg, err, errlen);
	return fail(err, errlen, "unknown device kind '%s'", flag);
}

void cli_usage(void)
{
	printf(
	    "Usage: minivmm --kernel PATH [options]\n"
	    "\n"
	    "Boot a guest kernel under KVM.\n"
	    "\n"
	    "Guest:\n"
	    "  --kernel PATH          bzImage, ELF vmlinux, or ELF with a PVH entry note\n"
	    "  --boot linux64|pvh     override the boot protocol detected from the image\n"
	    "  --initrd PATH          initial ramdisk\n"
	    "  --cmdline STRING       kernel command line (default: empty)\n"
	    "  --memory SIZE          guest RAM, e.g. 512M, 2G (bare number: MiB; default 256M);\n"
	    "                         16M to 1T, a whole number of MiB\n"
	    "  --populate             pre-fault guest RAM in a low-priority background thread\n"
	    "                         (cheaper first touches; costs host CPU and memory while\n"
	    "                         the guest runs; default off, --no-populate)\n"
	    "  --cpus N               number of vCPUs (1-%d, default 1)\n"
	    "  --pin VCPU=CPULIST,... pin vCPU threads to host CPUs, e.g. 0=2,1=3-4\n"
	    "\n"
	    "Devices (repeat a flag for more; every one takes transport=mmio|pci, default "
	    "pci):\n",
	    MAX_VCPUS);
	for (int i = 0; device_kinds[i]; i++)
		device_kind_usage(device_kinds[i]);
	printf(
	    "  --io-pin CPULIST       pin the I/O thread (device emulation) to host CPUs\n"
	    "\n"
	    "Machine description:\n"
	    "  --dump-dtb PATH        write the machine as a flattened device tree (dtc -I dtb)\n"
	    "  --dtb                  also hand that tree to the guest (setup_data SETUP_DTB)\n"
	    "\n"
	    "Console:\n"
	    "  --console stdio[,filter=on|off]|none|file=PATH[,max-size=SIZE]\n"
	    "                         where COM1 goes (default stdio; on a terminal, Ctrl-A x "
	    "quits);\n"

	    "                         a file stops growing at max-size (default 64M, 0: no "
	    "cap);\n"
	    "                         filter: the guest's control bytes and escape sequences "
	    "are\n"
	    "                         shown as text (^[), not sent (default: on for a "
	    "terminal)\n"
	    "  --console virtio[,transport=mmio|pci][,stdio...|,none|,file=...]\n"
	    "                         also a virtio console, hvc0 (add console=hvc0 to "
	    "--cmdline),\n"
	    "                         on the same output; the input goes to hvc0, not COM1\n"
	    "  --vport NAME:stdout|stderr|file=PATH[,max-size=SIZE]|stdin\n"
	    "                         a port of that virtio console named NAME in the guest\n"
	    "                         (/sys/class/virtio-ports/*/name): what the guest writes\n"
	    "                         goes to stdout, stderr or the file, or it reads stdin\n"
	    "                         (with --console virtio,none or ,file=); up to 6 (a VM\n"
	    "                         with them cannot be snapshotted)\n"
	    "\n"
	    "Control:\n"
	    "  --api-sock PATH        serve the JSON control socket at PATH (see minivmm ctl)\n"
	    "  --virtiofsd PATH       the virtiofsd --share starts (default: Debian's\n"
	    "                         /usr/lib/qemu/virtiofsd, other distributions' places, PATH)\n"
	    "\n"
	    "Snapshots (minivmm ctl --sock PATH snapshot DIR writes one):\n"
	    "  --restore DIR          rebuild the VM saved in DIR and run it (instead of\n"
	    "                         --kernel; memory, vCPUs and devices come from DIR, what\n"
	    "                         they use on the host from --backend)\n"
	    "  --paused               with --restore: wait for the control socket's resume\n"
	    "  --backend N:OPTIONS    with --restore: the host side of device N (command-line\n"
	    "                         order, from 0), which a snapshot never names: a --disk's\n"
	    "                         path=IMAGE[,readonly=on][,cache=...], a --net's tap=NAME\n"
	    "                         or user[,hostfwd=...]; required for each such device\n"
	    "\n"
	    "Other:\n"
	    "  --seccomp on|off       system-call allow-list once the VM is set up (default on;\n"
	    "                         off in sanitizer builds)\n"
	    "  --jail DIR,uid=N,gid=N once set up, chroot into DIR (empty, root's) and run as\n"
	    "                         uid/gid N (needs root; see docs/sandboxing.md)\n"
	    "  --quiet                no informational messages on stderr\n"
	    "  --timing               at exit, print on stderr the start-up time per step, up to\n"
	    "                         the first serial byte (\"startup-us: ...\"; from exec when\n"
	    "                         the launcher sets " STARTUP_T0_ENV
	    "; see docs/performance.md)\n"
	    "  --help                 this text\n"
	    "  --version              print the version\n"
	    "\n"
	    "Exit status: the value the guest writes to I/O port 0xf4; 0 after a guest reset or\n"
	    "power-off; 98 after a triple fault; 99 after a KVM internal error or failed entry;\n"
	    "1 on a VMM error while running; 2 on a usage or set-up error (one line on stderr,\n"
	    "minivmm: error: ...); 128+n when stopped by signal n (SIGINT, SIGTERM, SIGHUP).\n");
}

enum {
	OPT_KERNEL = 256,
	OPT_BOOT,
	OPT_INITRD,
	OPT_CMDLINE,
	OPT_MEMORY,
	OPT_POPULATE,
	OPT_NO_POPULATE,
	OPT_CPUS,
	OPT_PIN,
	OPT_CONSOLE,
	OPT_VPORT,
	OPT_IO_PIN,
	OPT_DUMP_DTB,
	OPT_DTB,
	OPT_API_SOCK,
	OPT_SECCOMP,
	OPT_JAIL,
	OPT_QUIET,
	OPT_RESTORE,
	OPT_PAUSED,
	OPT_BACKEND,
	OPT_TIMING,
	OPT_VIRTIOFSD,
	OPT_HELP,
	OPT_VERSION,
	OPT_DEVICE_BASE, /* + index in device_kinds */
};

/* --backend INDEX:SPEC; what SPEC may hold is checked at the restore (snapshot.c). */
_Static_assert(MAX_DEVICES == 16, "the message below names the index range");
static int parse_backend(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long index = strtoul(arg, &end, 10);
	if (end == arg || *end != ':' || !end[1] || errno || arg[0] == '-' || index >= MAX_DEVICES)
		return fail(err, errlen,
			    "--backend: expected INDEX:OPTIONS, e.g. 0:path=disk.img or 1:tap=tap0 "
			    "(INDEX 0 to 15), not '%s'",
			    arg);
	if (cfg->backend[index])
		return fail(err, errlen, "--backend: device %s given twice", arg);
	cfg->backend[index] = end + 1;
	return 0;
}

static int host_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 ? (int)n : 1;
}

/* Device flags take their options QEMU-style after a comma ("--rng,transport=mmio"); getopt
 * wants "--rng=transport=mmio". Rewrite such words in place (the ',' becomes '='). */
static void rewrite_device_options(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		for (int k = 0; device_kinds[k]; k++) {
			size_t n = strlen(device_kinds[k]->flag);
			if (!strncmp(argv[i], "--", 2) &&
			    !strncmp(argv[i] + 2, device_kinds[k]->flag, n) &&
			    argv[i][2 + n] == ',')
				argv[i][2 + n] = '=';
		}
	}
}

static const struct option base_opts[] = {
    {"kernel", required_argument, NULL, OPT_KERNEL},
    {"boot", required_argument, NULL, OPT_BOOT},
    {"initrd", required_argument, NULL, OPT_INITRD},
    {"cmdline", required_argument, NULL, OPT_CMDLINE},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"populate", no_argument, NULL, OPT_POPULATE},
    {"no-populate", no_argument, NULL, OPT_NO_POPULATE},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"pin", required_argument, NULL, OPT_PIN},
    {"console", required_argument, NULL, OPT_CONSOLE},
    {"vport", required_argument, NULL, OPT_VPORT},
    {"io-pin", required_argument, NULL, OPT_IO_PIN},
    {"dump-dtb", required_argument, NULL, OPT_DUMP_DTB},
    {"dtb", no_argument, NULL, OPT_DTB},
    {"api-sock", required_argument, NULL, OPT_API_SOCK},
    {"seccomp", required_argument, NULL, OPT_SECCOMP},
    {"jail", required_argument, NULL, OPT_JAIL},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"restore", required_argument, NULL, OPT_RESTORE},
    {"paused", no_argument, NULL, OPT_PAUSED},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"timing", no_argument, NULL, OPT_TIMING},
    {"virtiofsd", required_argument, NULL, OPT_VIRTIOFSD},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
};
#define NR_BASE_OPTS (sizeof(base_opts) / sizeof(base_opts[0]))

/* getopt_long's table: the fixed flags, then one per device kind, then the terminator. */
static void long_options(struct option opts[NR_BASE_OPTS + MAX_DEVICE_KINDS + 1])
{
	size_t nopts = NR_BASE_OPTS;
	memcpy(opts, base_opts, sizeof(base_opts));
	for (int i = 0; device_kinds[i] && i < MAX_DEVICE_KINDS; i++)
		opts[nopts++] = (struct option){device_kinds[i]->flag,
						device_kinds[i]->needs_options ? required_argument
									       : optional_argument,
						NULL, OPT_DEVICE_BASE + i};
	opts[nopts] = (struct option){NULL, 0, NULL, 0};
}

static void config_defaults(struct vm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cmdline = "";
	cfg->memory_bytes = 256ULL << 20;
	cfg->nr_cpus = 1;
	cfg->populate = false; /* pre-faulting competes with the guest's I/O: opt in */
	cfg->seccomp = seccomp_default_on();
	cfg->console = CONSOLE_STDIO;
}

static int parse_boot(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	if (!strcmp(arg, "linux64"))
		cfg->protocol = BOOT_LINUX64;
	else if (!strcmp(arg, "pvh"))
		cfg->protocol = BOOT_PVH;
	else
		return fail(err, errlen, "invalid --boot '%s' (expected linux64 or pvh)", arg);
	return 0;
}

static int parse_memory(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	if (parse_size(arg, &cfg->memory_bytes, err, errlen))
		return -1;
	if (cfg->memory_bytes < MIN_MEMORY || cfg->memory_bytes > MAX_MEMORY)
		return fail(err, errlen, "--memory %s is out of range (16M to 1T)", arg);
	if (cfg->memory_bytes & ((1ULL << 20) - 1))
		return fail(err, errlen, "--memory %s is not a whole number of MiB", arg);
	return 0;
}

static int parse_cpus(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long n = strtol(arg, &end, 10);
	if (errno || *end || !isdigit((unsigned char)arg[0]) || n < 1 || n > MAX_VCPUS) {
		snprintf(err, errlen, "invalid --cpus '%s' (expected 1 to %d)", arg, MAX_VCPUS);
		return -1;
	}
	cfg->nr_cpus = (int)n;
	return 0;
}

static int parse_console(const char *arg, struct vm_config *cfg, char *err, size_t errlen);

/* virtio[,transport=mmio|pci][,OUTPUT]: hvc0, on OUTPUT (what --console takes otherwise,
 * default stdio). */
static int parse_console_virtio(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	const char *spec = "";
	const char *rest = arg + strlen("virtio");
	if (*rest == ',')
		rest++;
	if (!strncmp(rest, "transport=", 10)) {
		size_t n = strcspn(rest + 10, ",");
		if (n == 4 && !strncmp(rest + 10, "mmio", 4))
			spec = "transport=mmio";
		else if (n == 3 && !strncmp(rest + 10, "pci", 3))
			spec = "transport=pci";
		else
			return fail(err, errlen,
				    "invalid --console %s (transport= takes mmio or pci)", arg);
		rest += 10 + n;
		if (*rest == ',')
			rest++;
	}
	if (!strncmp(rest, "virtio", 6))
		return fail(err, errlen,
			    "invalid --console %s (expected virtio[,transport=mmio|pci][,stdio"
			    "[,filter=on|off]|,none|,file=PATH[,max-size=SIZE]])",
			    arg);
	if (*rest && parse_console(rest, cfg, err, errlen))
		return -1;
	if (!*rest)
		cfg->console = CONSOLE_STDIO;
	cfg->console_virtio = true;
	return parse_device(device_kind_find("virtio-console"), spec, cfg, err, errlen);
}

static int parse_console(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	if (cfg->console_virtio)
		return fail(err, errlen,
			    "--console %s: --console virtio was given already (give one --console)",
			    arg);
	cfg->console_filter = CONSOLE_FILTER_AUTO; /* a later --console starts afresh */
	if (!strncmp(arg, "virtio", 6) && (!arg[6] || arg[6] == ','))
		return parse_console_virtio(arg, cfg, err, errlen);
	if (!strcmp(arg, "stdio"))
		cfg->console = CONSOLE_STDIO;
	else if (!strcmp(arg, "stdio,filter=on") || !strcmp(arg, "stdio,filter=off")) {
		cfg->console = CONSOLE_STDIO;
		cfg->console_filter = arg[14] == 'n' ? CONSOLE_FILTER_ON : CONSOLE_FILTER_OFF;
	} else if (!strcmp(arg, "none"))
		cfg->console = CONSOLE_NONE;
	else if (!strncmp(arg, "file=", 5) && arg[5])
		return parse_console_file(cfg, arg + 5, err, errlen);
	else
		return fail(err, errlen,
			    "invalid --console '%s' (expected stdio[,filter=on|off], none, "
			    "file=PATH[,max-size=SIZE] or virtio[,...])",
			    arg);
	return 0;
}

static int parse_seccomp(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	if (strcmp(arg, "on") && strcmp(arg, "off"))
		return fail(err, errlen, "invalid --seccomp '%s' (expected on or off)", arg);
	cfg->seccomp = !strcmp(arg, "on");
	return 0;
}

/* The first flag seen that describes the machine, which --restore takes from the snapshot. */
static const char *machine_flag;

static const char *flag_name(int c)
{
	if (c >= OPT_DEVICE_BASE)
		return device_kinds[c - OPT_DEVICE_BASE]->flag;
	for (size_t i = 0; i < NR_BASE_OPTS; i++)
		if (base_opts[i].val == c)
			return base_opts[i].name;
	return "?";
}

static void note_machine_flag(int c)
{
	static const int flags[] = {OPT_KERNEL, OPT_BOOT, OPT_INITRD,	OPT_CMDLINE,  OPT_MEMORY,
				    OPT_CPUS,	OPT_DTB,  OPT_DUMP_DTB, OPT_POPULATE, OPT_VPORT};
	bool machine = c >= OPT_DEVICE_BASE;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		machine |= c == flags[i];
	if (machine && !machine_flag)
		machine_flag = flag_name(c);
}

/* One option from getopt_long (c, with optarg and optind as it left them). CLI_RUN: go on. */
static enum cli_result apply_option(int c, char **argv, struct vm_config *cfg, const char **pin_arg,
				    char *err, size_t errlen)
{
	int rc = 0;
	if (c >= OPT_KERNEL && c < OPT_DEVICE_BASE + MAX_DEVICE_KINDS)
		note_machine_flag(c);
	switch (c) {
	case OPT_KERNEL:
		cfg->kernel_path = optarg;
		break;
	case OPT_BOOT:
		rc = parse_boot(optarg, cfg, err, errlen);
		break;
	case OPT_INITRD:
		cfg->initrd_path = optarg;
		break;
	case OPT_CMDLINE:
		cfg->cmdline = optarg;
		break;
	case OPT_MEMORY:
		rc = parse_memory(optarg, cfg, err, errlen);
		break;
	case OPT_POPULATE:
		cfg->populate = true;
		break;
	case OPT_NO_POPULATE:
		cfg->populate = false;
		break;
	case OPT_CPUS:
		rc = parse_cpus(optarg, cfg, err, errlen);
		break;
	case OPT_PIN:
		if (*pin_arg)
			rc = fail(err, errlen, "--pin given twice%s", "");
		else
			*pin_arg = optarg;
		break;
	case OPT_CONSOLE:
		rc = parse_console(optarg, cfg, err, errlen);
		break;
	case OPT_VPORT:
		rc = vport_parse(optarg, cfg, err, errlen);
		break;
	case OPT_IO_PIN:
		rc = parse_cpu_list(optarg, host_cpu_count(), &cfg->io_pin_set, err, errlen);
		if (!rc)
			cfg->io_pinned = true;
		break;
	case OPT_DUMP_DTB:
		cfg->dump_dtb_path = optarg;
		break;
	case OPT_DTB:
		cfg->pass_dtb = true;
		break;
	case OPT_VIRTIOFSD:
		if (!*optarg)
			rc = fail(err, errlen, "--virtiofsd needs a path%s", "");
		else
			cfg->virtiofsd_path = optarg;
		break;
	case OPT_API_SOCK:
		if (!*optarg)
			rc = fail(err, errlen, "--api-sock needs a path%s", "");
		else
			cfg->api_sock_path = optarg;
		break;
	case OPT_SECCOMP:
		rc = parse_seccomp(optarg, cfg, err, errlen);
		break;
	case OPT_JAIL:
		rc = jail_parse(optarg, &cfg->jail, err, errlen);
		break;
	case OPT_QUIET:
		cfg->quiet = true;
		break;
	case OPT_RESTORE:
		if (!*optarg)
			rc = fail(err, errlen, "--restore needs a snapshot directory%s", "");
		else
			cfg->restore_dir = optarg;
		break;
	case OPT_PAUSED:
		cfg->start_paused = true;
		break;
	case OPT_BACKEND:
		rc = parse_backend(optarg, cfg, err, errlen);
		break;
	case OPT_TIMING:
		cfg->timing = true;
		break;
	case OPT_HELP:
		cli_usage();
		return CLI_EXIT_OK;
	case OPT_VERSION:
		printf("minivmm 0.1\n");
		return CLI_EXIT_OK;
	case ':':
		rc = fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		break;
	default:
		if (c >= OPT_DEVICE_BASE && c < OPT_DEVICE_BASE + MAX_DEVICE_KINDS)
			rc = parse_device(device_kinds[c - OPT_DEVICE_BASE], optarg, cfg, err,
					  errlen);
		else
			rc =
			    fail(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
		break;
	}
	return rc ? CLI_ERROR : CLI_RUN;
}

/* What needs every option seen: no stray words, a kernel, --pin against --cpus. */
static int check_config(int argc, char **argv, struct vm_config *cfg, const char *pin_arg,
			char *err, size_t errlen)
{
	if (optind < argc)
		return fail(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
	if (cfg->restore_dir && machine_flag)
		return fail(
		    err, errlen,
		    "--%s cannot be used with --restore (the machine comes from the snapshot)",
		    machine_flag);
	if (!cfg->restore_dir && cfg->start_paused)
		return fail(err, errlen, "--paused is for --restore only%s", "");
	for (int i = 0; i < MAX_DEVICES; i++)
		if (!cfg->restore_dir && cfg->backend[i])
			return fail(
			    err, errlen,
			    "--backend is for --restore only (a cold boot gives the device's "
			    "flag all its options)%s",
			    "");
	if (!cfg->kernel_path && !cfg->restore_dir)
		return fail(err, errlen, "--kernel PATH is required (see --help)%s", "");
	bool vconsole = false;
	for (int i = 0; i < cfg->nr_devices; i++)
		vconsole |= cfg->devices[i].kind == device_kind_find("virtio-console");
	if (vport_check(cfg, vconsole, err, errlen))
		return -1;
	/* A chroot alone is escapable by code that runs in it (sanitizer builds, which cannot
	 * run the filters, are test builds). */
	if (cfg->jail.enabled && !cfg->seccomp && seccomp_default_on())
		return fail(err, errlen,
			    "--jail needs the seccomp filters: not with --seccomp off%s", "");
	if (pin_arg && parse_pin_list(pin_arg, cfg->nr_cpus, host_cpu_count(), cfg, err, errlen))
		return -1;
	return 0;
}

enum cli_result cli_parse(int argc, char **argv, struct vm_config *cfg, char *err, size_t errlen)
{
	struct option opts[NR_BASE_OPTS + MAX_DEVICE_KINDS + 1];
	long_options(opts);
	config_defaults(cfg);
	const char *pin_arg = NULL;
	machine_flag = NULL;

	rewrite_device_options(argc, argv);
	opterr = 0;
	/* 0, not 1: glibc then also forgets its position inside a word ("-xyz") from a previous
	 * call, which would otherwise be read from that call's (perhaps freed) argv. */
	optind = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		enum cli_result r = apply_option(c, argv, cfg, &pin_arg, err, errlen);
		if (r != CLI_RUN)
			return r;
	}
	return check_config(argc, argv, cfg, pin_arg, err, errlen) ? CLI_ERROR : CLI_RUN;
}

void cli_free_config(struct vm_config *cfg)
{
	for (int i = 0; i < cfg->nr_devices; i++) {
		const struct device_kind_desc *kind = cfg->devices[i].kind;
		if (kind->free_parsed)
			kind->free_parsed(cfg->devices[i].parsed);
		else
			free(cfg->devices[i].parsed);
		cfg->devices[i].parsed = NULL;
	}
	cfg->nr_devices = 0;
	vport_free_config(cfg);
}
