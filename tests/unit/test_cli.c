/* Command-line parsing: sizes, CPU lists, pin lists, and whole argument vectors. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/cli/cli.h"
#include "vmm/kinds/device_registry.h"

static char err[256];

Test(parse_size, suffixes)
{
	uint64_t v;
	cr_assert_eq(parse_size("512M", &v, err, sizeof(err)), 0);
	cr_assert_eq(v, 512ULL << 20);
	cr_assert_eq(parse_size("2G", &v, err, sizeof(err)), 0);
	cr_assert_eq(v, 2ULL << 30);
	cr_assert_eq(parse_size("4096k", &v, err, sizeof(err)), 0);
	cr_assert_eq(v, 4096ULL << 10);
	cr_assert_eq(parse_size("1T", &v, err, sizeof(err)), 0);
	cr_assert_eq(v, 1ULL << 40);
	cr_assert_eq(parse_size("256MiB", &v, err, sizeof(err)), 0);
	cr_assert_eq(v, 256ULL << 20);
	cr_assert_eq(parse_size("128", &v, err, sizeof(err)), 0, "bare numbers are MiB");
	cr_assert_eq(v, 128ULL << 20);
}

Test(parse_size, rejects_garbage)
{
	uint64_t v = 7;
	const char *bad[] = {"", "M", "-1M", "12X", "1.5G", "12MM", " 12M", "0x10M", "12M "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse_size(bad[i], &v, err, sizeof(err)), -1, "accepted '%s'", bad[i]);
		cr_assert(strlen(err) > 0);
	}
	cr_assert_eq(v, 7, "output untouched on error");
}

Test(parse_size, rejects_overflow)
{
	uint64_t v;
	cr_assert_eq(parse_size("99999999999999999999", &v, err, sizeof(err)), -1);
	cr_assert_eq(parse_size("17179869184T", &v, err, sizeof(err)), -1, "2^34 TiB overflows");
	cr_assert_eq(parse_size("16777215T", &v, err, sizeof(err)), 0);
	cr_assert_eq(v, 16777215ULL << 40);
}

Test(parse_cpu_list, ranges_and_lists)
{
	cpu_set_t set;
	cr_assert_eq(parse_cpu_list("1,3-5,7", 8, &set, err, sizeof(err)), 0);
	cr_assert_eq(CPU_COUNT(&set), 5);
	cr_assert(CPU_ISSET(1, &set) && CPU_ISSET(3, &set) && CPU_ISSET(4, &set));
	cr_assert(CPU_ISSET(5, &set) && CPU_ISSET(7, &set) && !CPU_ISSET(6, &set));
	char buf[64];
	format_cpu_list(&set, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1,3-5,7");
}

Test(parse_cpu_list, rejects_bad_lists)
{
	cpu_set_t set;
	const char *bad[] = {"", "8", "1-8", "5-3", "1,", ",1", "a", "1--2", "1 2", "-1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse_cpu_list(bad[i], 8, &set, err, sizeof(err)), -1, "accepted '%s'",
			     bad[i]);
	parse_cpu_list("9", 8, &set, err, sizeof(err));
	cr_assert(strstr(err, "does not exist"), "error names the problem: %s", err);
}

Test(parse_pin_list, several_vcpus_with_lists)
{
	struct vm_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cr_assert_eq(parse_pin_list("0=2,1=3-4,6", 2, 8, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert(cfg.pinned[0] && cfg.pinned[1]);
	cr_assert_eq(CPU_COUNT(&cfg.pin_sets[0]), 1);
	cr_assert(CPU_ISSET(2, &cfg.pin_sets[0]));
	cr_assert_eq(CPU_COUNT(&cfg.pin_sets[1]), 3, "1=3-4,6 continues after the comma");
	cr_assert(CPU_ISSET(6, &cfg.pin_sets[1]));
}

Test(parse_pin_list, rejects_bad_pins)
{
	const char *bad[] = {"", "0", "=1", "x=1", "2=1", "0=1,0=2", "0=", "0=9", "0=1,,1=2"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vm_config cfg;
		memset(&cfg, 0, sizeof(cfg));
		cr_assert_eq(parse_pin_list(bad[i], 2, 8, &cfg, err, sizeof(err)), -1,
			     "accepted '%s'", bad[i]);
	}
}

static enum cli_result parse(struct vm_config *cfg, int argc, char **argv)
{
	return cli_parse(argc, argv, cfg, err, sizeof(err));
}

Test(cli_parse, defaults_and_values)
{
	struct vm_config cfg;
	char *argv[] = {"minivmm",	 "--kernel", "k",	  "--memory",  "1G",
			"--cpus",	 "2",	     "--cmdline", "console=x", "--console",
			"file=/tmp/out", "--boot",   "pvh",	  "--pin",     "1=0"};
	cr_assert_eq(parse(&cfg, 15, argv), CLI_RUN, "%s", err);
	cr_assert_str_eq(cfg.kernel_path, "k");
	cr_assert_eq(cfg.memory_bytes, 1ULL << 30);
	cr_assert_eq(cfg.nr_cpus, 2);
	cr_assert_str_eq(cfg.cmdline, "console=x");
	cr_assert_eq(cfg.console, CONSOLE_FILE);
	cr_assert_str_eq(cfg.console_path, "/tmp/out");
	cr_assert_eq(cfg.console_path_len, 8);
	cr_assert_eq(cfg.console_max_bytes, 64ULL << 20, "a console file is capped by default");
	cr_assert_eq(cfg.protocol, BOOT_PVH);
	cr_assert(cfg.pinned[1] && !cfg.pinned[0]);
	cr_assert(!cfg.populate, "pre-faulting is opt-in");

	char *argv2[] = {"minivmm", "--kernel", "k"};
	cr_assert_eq(parse(&cfg, 3, argv2), CLI_RUN);
	cr_assert_eq(cfg.memory_bytes, 256ULL << 20, "default 256M");
	cr_assert_eq(cfg.nr_cpus, 1);
	cr_assert_str_eq(cfg.cmdline, "");

	char *argv3[] = {"minivmm", "--kernel", "k", "--populate"};
	cr_assert_eq(parse(&cfg, 4, argv3), CLI_RUN);
	cr_assert(cfg.populate);
	char *argv4[] = {"minivmm", "--kernel", "k", "--populate", "--no-populate"};
	cr_assert_eq(parse(&cfg, 5, argv4), CLI_RUN);
	cr_assert(!cfg.populate, "the last of the two wins");
}

Test(cli_parse, console_file_max_size)
{
	struct vm_config cfg;
	char *argv[] = {"minivmm", "--kernel", "k", "--console",
			"file=/tmp/a,max-size=b,max-size=4K"};
	cr_assert_eq(parse(&cfg, 5, argv), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.console, CONSOLE_FILE);
	/* The last ",max-size=" is the option; what comes before it is the path. */
	cr_assert_eq(cfg.console_path_len, strlen("/tmp/a,max-size=b"));
	cr_assert(!strncmp(cfg.console_path, "/tmp/a,max-size=b", cfg.console_path_len));
	cr_assert_eq(cfg.console_max_bytes, 4096);
	char *argv2[] = {"minivmm", "--kernel", "k", "--console", "file=/tmp/a,max-size=0"};
	cr_assert_eq(parse(&cfg, 5, argv2), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.console_max_bytes, 0, "0: no cap");
}

/* --console virtio[,transport=][,OUTPUT]: a virtio console device, on OUTPUT (default stdio). */
Test(cli_parse, console_virtio)
{
	struct vm_config cfg;
	char *argv[] = {"minivmm", "--kernel", "k", "--console", "virtio"};
	cr_assert_eq(parse(&cfg, 5, argv), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.console, CONSOLE_STDIO);
	cr_assert(cfg.console_virtio);
	cr_assert_eq(cfg.nr_devices, 1);
	cr_assert_str_eq(cfg.devices[0].kind->flag, "virtio-console");
	cr_assert_eq(cfg.devices[0].transport, TRANSPORT_PCI);
	cli_free_config(&cfg);
	char *argv2[] = {"minivmm", "--kernel", "k", "--console",
			 "virtio,transport=mmio,file=/tmp/a,b,max-size=4K"};
	cr_assert_eq(parse(&cfg, 5, argv2), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.devices[0].transport, TRANSPORT_MMIO);
	cr_assert_eq(cfg.console, CONSOLE_FILE);
	cr_assert(!strncmp(cfg.console_path, "/tmp/a,b", cfg.console_path_len));
	cr_assert_eq(cfg.console_path_len, 8);
	cr_assert_eq(cfg.console_max_bytes, 4096);
	cli_free_config(&cfg);
	char *argv3[] = {"minivmm", "--kernel", "k", "--console", "virtio,stdio,filter=off"};
	cr_assert_eq(parse(&cfg, 5, argv3), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.console_filter, CONSOLE_FILTER_OFF);
	cr_assert_eq(cfg.devices[0].transport, TRANSPORT_PCI);
	cli_free_config(&cfg);
	char *argv4[] = {"minivmm", "--kernel", "k", "--console", "virtio,none"};
	cr_assert_eq(parse(&cfg, 5, argv4), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.console, CONSOLE_NONE);
	cli_free_config(&cfg);
}

Test(cli_parse, rejects_bad_command_lines)
{
	struct {
		int argc;
		char *argv[6];
		const char *msg;
	} cases[] = {
	    {1, {"minivmm"}, "--kernel"},
	    {4, {"minivmm", "--kernel", "k", "--bogus"}, "unknown option"},
	    {2, {"minivmm", "--kernel"}, "needs a value"},
	    {5, {"minivmm", "--kernel", "k", "--cpus", "0"}, "--cpus"},
	    {5, {"minivmm", "--kernel", "k", "--cpus", "2x"}, "--cpus"},
	    {5, {"minivmm", "--kernel", "k", "--memory", "1M"}, "out of range"},
	    {5, {"minivmm", "--kernel", "k", "--memory", "100000K"}, "MiB"},
	    {5, {"minivmm", "--kernel", "k", "--boot", "efi"}, "--boot"},
	    {5, {"minivmm", "--kernel", "k", "--console", "file="}, "--console"},
	    {5, {"minivmm", "--kernel", "k", "--console", "file=,max-size=1K"}, "no path"},
	    {5, {"minivmm", "--kernel", "k", "--console", "file=x,max-size=lots"}, "invalid size"},
	    {5, {"minivmm", "--kernel", "k", "--console", "file=x,max-size="}, "invalid size"},
	    {5, {"minivmm", "--kernel", "k", "--console", "virtio,transport=usb"}, "mmio or pci"},
	    {5, {"minivmm", "--kernel", "k", "--console", "virtio,virtio"}, "expected virtio["},
	    {5, {"minivmm", "--kernel", "k", "--console", "virtio,bogus"}, "--console"},
	    {5, {"minivmm", "--kernel", "k", "--console", "virtiox"}, "--console"},
	    {6,
	     {"minivmm", "--kernel", "k", "--console", "virtio", "--console=stdio"},
	     "given already"},
	    {5, {"minivmm", "--kernel", "k", "--pin", "1=0"}, "vCPU 1"},
	    {4, {"minivmm", "--kernel", "k", "extra"}, "unexpected argument"},
	    {5, {"minivmm", "--kernel", "k", "--backend", "0:tap=x"}, "for --restore only"},
	    {5, {"minivmm", "--restore", "d", "--backend", "16:tap=x"}, "INDEX 0 to 15"},
	    {5, {"minivmm", "--restore", "d", "--backend", "0tap=x"}, "expected INDEX"},
	    {5, {"minivmm", "--restore", "d", "--backend", "-1:user"}, "expected INDEX"},
	    {5, {"minivmm", "--restore", "d", "--backend", "1:"}, "expected INDEX"},
	    {5, {"minivmm", "--restore", "d", "--backend", ":user"}, "expected INDEX"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vm_config cfg;
		int argc = 0;
		while (argc < 6 && cases[i].argv[argc])
			argc++;
		cr_assert_eq(argc, cases[i].argc, "case %zu: argc", i);
		cr_assert_eq(parse(&cfg, argc, cases[i].argv), CLI_ERROR, "case %zu", i);
		cr_assert(strstr(err, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err,
			  cases[i].msg);
	}
}

/* --backend INDEX:SPEC: kept for the restore (snapshot.c checks SPEC), once per device. */
Test(cli_parse, backend_with_restore)
{
	struct vm_config cfg;
	char *ok[] = {"minivmm", "--restore", "d", "--backend", "2:tap=mv1"};
	cr_assert_eq(parse(&cfg, 5, ok), CLI_RUN, "%s", err);
	cr_assert_str_eq(cfg.backend[2], "tap=mv1");
	cr_assert_null(cfg.backend[0]);
	cli_free_config(&cfg);
	char *twice[] = {"minivmm",   "--restore", "d",	    "--backend",
			 "2:tap=mv1", "--backend", "2:user"};
	cr_assert_eq(parse(&cfg, 7, twice), CLI_ERROR);
	cr_assert(strstr(err, "given twice"), "%s", err);
}

/* Device options come from one table per kind (vmm/kinds/): the messages it derives. */
Test(cli_parse, device_option_errors)
{
	struct {
		const char *flag, *value, *msg;
	} cases[] = {
	    {"--rng", "bogus", "unknown --rng option 'bogus' (expected transport=)"},
	    {"--rng", "transport=usb", "invalid transport 'usb' (expected mmio or pci)"},
	    {"--net", "user,bogus=1",
	     "unknown --net option 'bogus' (expected tap=, user, mac=, tx=, tx-burst=, "
	     "tx-timer=, poll-us=, tx-uring=, offload=, hostfwd=, host-loopback=, "
	     "restrict=, max-sockets=, transport=)"},
	    {"--net", "user,tx=fast", "--net: invalid tx 'fast' (expected bh or timer)"},
	    {"--net", "user,tx-burst=0", "--net: invalid tx-burst '0' (expected 1 to 4096)"},
	    {"--net", "user,offload=maybe", "--net: invalid offload 'maybe' (expected on or off)"},
	    {"--net", "user,mac=01:00:00:00:00:01", "--net: invalid mac '01:00:00:00:00:01'"},
	    {"--net", "user=1", "--net: user takes no value"},
	    {"--net", "tap", "--net: tap needs a value"},
	    {"--net", "tap=0123456789abcdef",
	     "--net: tap '0123456789abcdef' is longer than 15 bytes"},
	    {"--net", "tap=t0,user", "--net: give exactly one backend: tap=NAME or user"},
	    {"--net", "tap=t0,hostfwd=tcp::1-:2", "--net: hostfwd= needs the user backend"},
	    {"--net", "user,tx-uring=on", "--net: tx-uring= needs the tap backend"},
	    /* Removed (it lost every measurement): said so, whatever its value. */
	    {"--net", "tap=t0,rx-uring=on", "--net: rx-uring was removed: "},
	    {"--net", "tap=t0,rx-uring=off", "--net: rx-uring was removed: "},
	    /* Every rule reaches the user-mode backend's check, not only the first. */
	    {"--net", "user,hostfwd=tcp::1-:2,hostfwd=tcp::3-:x",
	     "--net: invalid hostfwd 'tcp::3-:x' (expected tcp|udp:[ADDR]:HOSTPORT-:GUESTPORT)"},
	    {"--balloon", "deflate-on-oom=2",
	     "--balloon: invalid deflate-on-oom '2' (expected on or off)"},
	    {"--balloon", "bogus",
	     "unknown --balloon option 'bogus' (expected deflate-on-oom=, free-page-reporting=, "
	     "transport=)"},
	    {"--disk", "readonly", "--disk: path=IMAGE or vhost-user=PATH is required"},
	    {"--disk", "path=/nonexistent/x.img,readonly",
	     "--disk: cannot open '/nonexistent/x.img': No such file or directory"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vm_config cfg;
		char flag[128];
		snprintf(flag, sizeof(flag), "%s,%s", cases[i].flag, cases[i].value);
		char *argv[] = {"minivmm", "--kernel", "k", flag};
		cr_assert_eq(parse(&cfg, 4, argv), CLI_ERROR, "case %zu", i);
		cr_assert(strstr(err, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err,
			  cases[i].msg);
	}
}

/* --jail DIR,uid=N,gid=N: parsed, and DIR checked (exists, a directory, empty, not the jail
 * user's). */
static char jail_dir[64];

static void make_jail_dir(void)
{
	strcpy(jail_dir, "/tmp/minivmm-jail-test.XXXXXX");
	cr_assert_not_null(mkdtemp(jail_dir));
	cr_assert_eq(chmod(jail_dir, 0755), 0);
}

static void remove_jail_dir(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/file", jail_dir);
	unlink(path);
	rmdir(jail_dir);
}

TestSuite(jail, .init = make_jail_dir, .fini = remove_jail_dir);

static enum cli_result parse_jail(const char *jail, struct vm_config *cfg)
{
	char arg[160];
	snprintf(arg, sizeof(arg), "%s", jail);
	char *argv[] = {"minivmm", "--kernel", "k", "--jail", arg, NULL};
	return cli_parse(5, argv, cfg, err, sizeof(err));
}

Test(jail, parsed)
{
	struct vm_config cfg;
	char arg[128];
	snprintf(arg, sizeof(arg), "%s,uid=65534,gid=4000", jail_dir);
	cr_assert_eq(parse_jail(arg, &cfg), CLI_RUN, "%s", err);
	cr_assert(cfg.jail.enabled);
	cr_assert_str_eq(cfg.jail.dir, jail_dir);
	cr_assert_eq(cfg.jail.uid, 65534);
	cr_assert_eq(cfg.jail.gid, 4000);
	cli_free_config(&cfg);
	char *argv[] = {"minivmm", "--kernel", "k", NULL};
	cr_assert_eq(cli_parse(3, argv, &cfg, err, sizeof(err)), CLI_RUN);
	cr_assert_not(cfg.jail.enabled, "no jail unless asked");
}

/* Each bad argument is refused with a message containing want. */
static void expect_jail_error(const char *fmt, const char *want)
{
	struct vm_config cfg;
	char arg[160];
	snprintf(arg, sizeof(arg), fmt, jail_dir);
	cr_assert_eq(parse_jail(arg, &cfg), CLI_ERROR, "accepted '%s'", arg);
	cr_assert(strstr(err, want), "'%s': %s", arg, err);
}

Test(jail, bad_ids_refused)
{
	expect_jail_error("%s,uid=1000", "needs uid=N and gid=N");
	expect_jail_error("%s,gid=1000", "needs uid=N and gid=N");
	expect_jail_error("%s", "needs uid=N and gid=N");
	expect_jail_error("%s,uid=0,gid=1000", "uid=0 would leave the VMM root");
	expect_jail_error("%s,uid=1000,gid=0", "gid=0 would leave the VMM root");
	expect_jail_error("%s,uid=-1,gid=1000", "invalid uid '-1'");
	expect_jail_error("%s,uid=12x,gid=1000", "invalid uid '12x'");
	expect_jail_error("%s,uid=4294967295,gid=1000", "invalid uid");
	expect_jail_error("%s,uid=99999999999999999999,gid=1000", "invalid uid");
	expect_jail_error("%s,uid,gid=1000", "invalid uid");
	expect_jail_error("%s,uid=1000,gid=1000,root=1", "unknown --jail option 'root'");
}

Test(jail, bad_directories_refused)
{
	expect_jail_error("relative,uid=1000,gid=1000", "absolute directory");
	expect_jail_error(",uid=1000,gid=1000", "absolute directory");
	expect_jail_error("%s/missing,uid=1000,gid=1000", "No such file or directory");
	expect_jail_error("/etc/hostname,uid=1000,gid=1000", "not a directory");
	struct stat st;
	cr_assert_eq(stat(jail_dir, &st), 0);
	char fmt[64];
	snprintf(fmt, sizeof(fmt), "%%s,uid=%u,gid=4000", (unsigned)st.st_uid);
	if (st.st_uid != 0) /* ids 0 are refused before the directory is looked at */
		expect_jail_error(fmt, "owned or writable by the jail's uid/gid");
	cr_assert_eq(chmod(jail_dir, 0775), 0);
	snprintf(fmt, sizeof(fmt), "%%s,uid=65534,gid=%u", (unsigned)st.st_gid);
	if (st.st_gid != 0)
		expect_jail_error(fmt, "owned or writable by the jail's uid/gid");
	cr_assert_eq(chmod(jail_dir, 0757), 0);
	expect_jail_error("%s,uid=65534,gid=4000", "owned or writable by the jail's uid/gid");
	cr_assert_eq(chmod(jail_dir, 0755), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/file", jail_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	expect_jail_error("%s,uid=65534,gid=4000", "not empty");
}

/* Found by fuzz_cli: after a vector that stopped inside a word of short options, getopt's
 * position in that word survived into the next call (a stale pointer into the old argv). */
Test(cli_parse, no_state_left_from_previous_call)
{
	struct vm_config cfg;
	char a0[] = "minivmm", a1[] = "-xyz";
	char *bad[] = {a0, a1, NULL};
	cr_assert_eq(parse(&cfg, 2, bad), CLI_ERROR);
	cli_free_config(&cfg);
	a1[2] = 'q'; /* the old word changes (or is freed) */
	char b1[] = "--kernel", b2[] = "k";
	char *good[] = {a0, b1, b2, NULL};
	cr_assert_eq(parse(&cfg, 3, good), CLI_RUN, "%s", err);
	cr_assert_str_eq(cfg.kernel_path, "k");
	cli_free_config(&cfg);
}

/* --share DIR,...: a first option without '=' is the directory (a path may be longer than a key
 * and hold characters a key may not); path=DIR says the same; a first option with '=' is not
 * taken for one. */
Test(cli_parse, share_takes_its_directory_first)
{
	if (geteuid() != 0)
		cr_skip_test("--share needs root");
	struct vm_config cfg;
	char dir[] = "/tmp/minivmm-cli-share-a-directory-name-longer-than-a-key-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char spec[160];
	snprintf(spec, sizeof(spec), "%s,tag=t1,readonly", dir);
	char *argv[] = {"minivmm", "--kernel", "k", "--share", spec};
	cr_assert_eq(parse(&cfg, 5, argv), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.nr_devices, 1);
	cr_assert_str_eq(cfg.devices[0].kind->flag, "share");
	cr_assert(cfg.devices[0].kind->shares_memory);
	cli_free_config(&cfg);
	snprintf(spec, sizeof(spec), "path=%s", dir);
	char *argv2[] = {"minivmm", "--kernel", "k", "--share", spec};
	cr_assert_eq(parse(&cfg, 5, argv2), CLI_RUN, "%s", err);
	cli_free_config(&cfg);
	char *argv3[] = {"minivmm", "--kernel", "k", "--share", "tag=t1"};
	cr_assert_eq(parse(&cfg, 5, argv3), CLI_ERROR);
	cr_assert(strstr(err, "path=DIR is required"), "%s", err);
	char *argv4[] = {"minivmm", "--kernel", "k", "--share", "/nonexistent-share,tag=x"};
	cr_assert_eq(parse(&cfg, 5, argv4), CLI_ERROR);
	cr_assert(strstr(err, "'/nonexistent-share': No such file or directory"), "%s", err);
	rmdir(dir);
}
