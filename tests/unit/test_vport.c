/* The virtio console's named ports on the host side: --vport's parsing (names the guest can
 * use, each output, the file opened and capped, the errors) and vport_add; each port's host
 * end (vport_host.h): output to its descriptor in order, a blocked reader never blocks a put, a
 * cap, a dead reader; input handed on as the device takes it, its end told once. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/cli/cli.h"
#include "vmm/cli/vport.h"
#include "vmm/cli/vport_host.h"

static char err[256];

static enum cli_result parse(struct vm_config *cfg, int argc, char **argv)
{
	return cli_parse(argc, argv, cfg, err, sizeof(err));
}

Test(vport_cli, ports_in_order)
{
	char path[] = "/tmp/minivmm-vport-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "old", 3), 3);
	close(fd);
	char file[64];
	snprintf(file, sizeof(file), "log.1:file=%s,max-size=4K", path);
	char *argv[] = {"minivmm",	    "--kernel",	 "k",	   "--vport",
			"out:stdout",	    "--console", "virtio", "--vport",
			"org.x_Y-0:stderr", "--vport",	 file};
	struct vm_config cfg;
	cr_assert_eq(parse(&cfg, 11, argv), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.nr_vports, 3);
	cr_assert_str_eq(cfg.vports[0].name, "out");
	cr_assert_eq(cfg.vports[0].out_fd, STDOUT_FILENO);
	cr_assert_eq(cfg.vports[0].in_fd, -1);
	cr_assert_not(cfg.vports[0].owns_out);
	cr_assert_eq(cfg.vports[0].out_max, 0, "stdout has no cap");
	cr_assert_str_eq(cfg.vports[1].name, "org.x_Y-0");
	cr_assert_eq(cfg.vports[1].out_fd, STDERR_FILENO);
	cr_assert_str_eq(cfg.vports[2].name, "log.1");
	cr_assert(cfg.vports[2].owns_out);
	cr_assert_eq(cfg.vports[2].out_max, 4096);
	struct stat st;
	cr_assert_eq(fstat(cfg.vports[2].out_fd, &st), 0);
	cr_assert_eq(st.st_size, 0, "the file is truncated");
	int out = cfg.vports[2].out_fd;
	cli_free_config(&cfg);
	cr_assert_eq(cfg.nr_vports, 0);
	cr_assert_eq(fcntl(out, F_GETFD), -1, "the file is closed with the configuration");
	/* A file without max-size is capped as a console file is. */
	snprintf(file, sizeof(file), "log:file=%s", path);
	char *argv2[] = {"minivmm", "--kernel", "k", "--virtio-console", "--vport", file};
	cr_assert_eq(parse(&cfg, 6, argv2), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.vports[0].out_max, CONSOLE_FILE_DEFAULT_MAX);
	cli_free_config(&cfg);
	unlink(path);
}

Test(vport_cli, bad_ports_refused)
{
	struct {
		const char *arg, *msg;
	} cases[] = {
	    {"out", "expected NAME:stdout"},
	    {":stdout", "invalid port name ''"},
	    {"a/b:stdout", "invalid port name 'a/b'"},
	    {"a b:stdout", "invalid port name"},
	    {"-x:stdout", "invalid port name"},
	    {".x:stdout", "invalid port name"},
	    {"abcdefghijklmnopqrstuvwxyz012345:stdout", "1 to 31"},
	    {"out:stdio", "after the name: stdout, stderr, file="},
	    {"out:", "after the name"},
	    {"in:stdin", "the console reads stdin (give --console virtio,none"},
	    {"out:file=", "file= needs a path"},
	    {"out:file=,max-size=4K", "file= needs a path"},
	    {"out:file=/tmp/x,max-size=lots", "invalid size"},
	    {"out:file=/nonexistent-dir/x", "cannot open '/nonexistent-dir/x'"},
	    {"out:file=/tmp", "is a directory"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vm_config cfg;
		char *argv[] = {"minivmm", "--kernel",		"k", "--console", "virtio",
				"--vport", (char *)cases[i].arg};
		cr_assert_eq(parse(&cfg, 7, argv), CLI_ERROR, "case %zu", i);
		cr_assert(strstr(err, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err,
			  cases[i].msg);
		cli_free_config(&cfg);
	}
}

Test(vport_cli, needs_a_virtio_console_and_no_restore)
{
	struct vm_config cfg;
	char *argv[] = {"minivmm", "--kernel", "k", "--vport", "out:stdout"};
	cr_assert_eq(parse(&cfg, 5, argv), CLI_ERROR);
	cr_assert(strstr(err, "--vport needs a virtio console"), "%s", err);
	cli_free_config(&cfg);
	char *argv2[] = {"minivmm", "--restore", "d", "--vport", "out:stdout"};
	cr_assert_eq(parse(&cfg, 5, argv2), CLI_ERROR);
	cr_assert(strstr(err, "--vport cannot be used with --restore"), "%s", err);
	cli_free_config(&cfg);
	char *twice[] = {"minivmm", "--kernel",	  "k",	     "--virtio-console",
			 "--vport", "out:stdout", "--vport", "out:stderr"};
	cr_assert_eq(parse(&cfg, 8, twice), CLI_ERROR);
	cr_assert(strstr(err, "port 'out' given twice"), "%s", err);
	cli_free_config(&cfg);
}

/* NAME:stdin: the guest reads minivmm's stdin, which only one reader may have. */
Test(vport_cli, stdin_port)
{
	struct vm_config cfg;
	char *argv[] = {"minivmm",  "--kernel",	 "k",	       "--vport",
			"in:stdin", "--console", "virtio,none"};
	cr_assert_eq(parse(&cfg, 7, argv), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.vports[0].in_fd, STDIN_FILENO);
	cr_assert_eq(cfg.vports[0].out_fd, -1, "an input port has no output");
	cli_free_config(&cfg);
	char *twice[] = {"minivmm", "--kernel", "k",	   "--console", "virtio,none",
			 "--vport", "a:stdin",	"--vport", "b:stdin"};
	cr_assert_eq(parse(&cfg, 9, twice), CLI_ERROR);
	cr_assert(strstr(err, "port 'a' reads stdin already"), "%s", err);
	cli_free_config(&cfg);
}

/* vport_add: what minivmm run gives (its own descriptors); six at most, names checked. */
Test(vport_cli, added_by_a_caller)
{
	struct vm_config cfg;
	char *argv[] = {"minivmm", "--kernel", "k", "--virtio-console"};
	cr_assert_eq(parse(&cfg, 4, argv), CLI_RUN, "%s", err);
	cr_assert_eq(vport_add(&cfg, "stdin", -1, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(vport_add(&cfg, "status", 9, -5, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.vports[0].in_fd, 0);
	cr_assert_eq(cfg.vports[0].out_fd, -1);
	cr_assert_eq(cfg.vports[1].out_fd, 9);
	cr_assert_eq(cfg.vports[1].in_fd, -1);
	cr_assert_not(cfg.vports[1].owns_out, "the caller's descriptor stays the caller's");
	cr_assert_eq(vport_add(&cfg, "status", 9, -1, err, sizeof(err)), -1);
	cr_assert_eq(vport_add(&cfg, "a:b", 9, -1, err, sizeof(err)), -1);
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof(name), "p%d", i);
		cr_assert_eq(vport_add(&cfg, name, -1, -1, err, sizeof(err)), 0, "%s", err);
	}
	cr_assert_eq(vport_add(&cfg, "p9", -1, -1, err, sizeof(err)), -1);
	cr_assert(strstr(err, "too many ports (at most 6"), "%s", err);
	cr_assert_eq(cfg.nr_vports, 6);
	cli_free_config(&cfg);
}

/* ---- the host end ---- */

static struct vport_host host;
static struct vport_config pcfg;
static int pipe_out[2], pipe_in[2];
static sem_t room_sem, end_sem;
static unsigned ends;
/* What the "device" keeps per deliver call (room), and what it got. */
static uint8_t kept[1 << 16];
static size_t kept_len, keep_room;
static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t delivered;

static void room_cb(void *opaque)
{
	(void)opaque;
	sem_post(&room_sem);
}

static unsigned deliver(struct vport_host *h, const uint8_t *buf, unsigned len)
{
	(void)h;
	pthread_mutex_lock(&keep_lock);
	unsigned n = len < keep_room ? len : (unsigned)keep_room;
	memcpy(kept + kept_len, buf, n);
	kept_len += n;
	keep_room -= n;
	pthread_mutex_unlock(&keep_lock);
	sem_post(&delivered);
	return n;
}

static void end_cb(struct vport_host *h)
{
	(void)h;
	ends++;
	sem_post(&end_sem);
}

static void host_setup(void)
{
	memset(&host, 0, sizeof(host));
	cr_assert_eq(pipe2(pipe_out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(pipe_in, O_CLOEXEC), 0);
	pcfg = (struct vport_config){.name = "p", .out_fd = pipe_out[1], .in_fd = pipe_in[0]};
	sem_init(&room_sem, 0, 0);
	sem_init(&end_sem, 0, 0);
	sem_init(&delivered, 0, 0);
	ends = 0;
	kept_len = 0;
	keep_room = sizeof(kept);
}

static void host_teardown(void)
{
	vport_host_stop(&host);
	for (int i = 0; i < 2; i++) {
		if (pipe_out[i] >= 0)
			close(pipe_out[i]);
		if (pipe_in[i] >= 0)
			close(pipe_in[i]);
	}
}

TestSuite(vport_host, .init = host_setup, .fini = host_teardown);

static uint8_t pattern(size_t k)
{
	return (uint8_t)(k * 131 + (k >> 9));
}

/* Read exactly len bytes from fd (the test's reader). */
static void read_all(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		cr_assert_gt(n, 0, "the output ended after %zu of %zu bytes", got, len);
		got += (size_t)n;
	}
}

static uint8_t out_data[1 << 20], out_got[1 << 20];

static void *reader(void *arg)
{
	(void)arg;
	read_all(pipe_out[0], out_got, sizeof(out_got));
	return NULL;
}

/* A reader that does not read: puts take what fits and return at once (a pipe holds 64 KiB,
 * the queue 256 KiB); once it reads, room() says when to put more, and every byte arrives
 * once, in order. */
Test(vport_host, output_never_blocks_and_loses_nothing)
{
	cr_assert_eq(vport_host_start_output(&host, &pcfg, room_cb, NULL), 0);
	for (size_t i = 0; i < sizeof(out_data); i++)
		out_data[i] = pattern(i);
	size_t put = 0;
	for (int k = 0; k < 4; k++)
		put += vport_host_output(&host, out_data + put, sizeof(out_data) - put);
	cr_assert_lt(put, sizeof(out_data), "everything fitted: nothing was held back");
	cr_assert_geq(put, CONSOLE_QUEUE_BYTES);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, reader, NULL), 0);
	while (put < sizeof(out_data)) {
		sem_wait(&room_sem); /* one per put that did not fit */
		put += vport_host_output(&host, out_data + put, sizeof(out_data) - put);
	}
	pthread_join(t, NULL);
	cr_assert_eq(memcmp(out_got, out_data, sizeof(out_data)), 0,
		     "the bytes differ or are out of order");
}

/* max-size: the first out_max bytes, then nothing; the guest's writes are still taken. */
Test(vport_host, output_is_capped)
{
	pcfg.out_max = 1000;
	cr_assert_eq(vport_host_start_output(&host, &pcfg, room_cb, NULL), 0);
	uint8_t data[700];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(i);
	cr_assert_eq(vport_host_output(&host, data, sizeof(data)), sizeof(data));
	cr_assert_eq(vport_host_output(&host, data, sizeof(data)), sizeof(data));
	vport_host_stop(&host);
	close(pipe_out[1]);
	pipe_out[1] = -1;
	uint8_t got[2000];
	size_t n = 0;
	ssize_t r;
	while ((r = read(pipe_out[0], got + n, sizeof(got) - n)) > 0)
		n += (size_t)r;
	cr_assert_eq(n, 1000);
	cr_assert_eq(memcmp(got, data, 700), 0);
	cr_assert_eq(memcmp(got + 700, data, 300), 0);
}

/* A reader that went away: the output is dropped, nothing blocks or fails the guest. */
Test(vport_host, dead_reader_drops_the_output)
{
	close(pipe_out[0]);
	pipe_out[0] = -1;
	signal(SIGPIPE, SIG_IGN);
	cr_assert_eq(vport_host_start_output(&host, &pcfg, room_cb, NULL), 0);
	static uint8_t data[1 << 20];
	/* 4 MiB: each put that does not fit is followed by room(), as the writer drops. */
	for (size_t put = 0; put < 4 * sizeof(data);) {
		size_t n = vport_host_output(&host, data, sizeof(data));
		put += n;
		if (n < sizeof(data))
			sem_wait(&room_sem);
	}
	vport_host_stop(&host);
	cr_assert(host.failed);
}

/* No output descriptor: everything is taken and goes nowhere, no thread. */
Test(vport_host, no_output)
{
	pcfg.out_fd = -1;
	cr_assert_eq(vport_host_start_output(&host, &pcfg, room_cb, NULL), 0);
	cr_assert_not(host.queued);
	cr_assert_eq(vport_host_output(&host, (const uint8_t *)"x", 1), 1);
}

/* Input: what the device does not keep waits for input_room (no polling), then goes on in
 * order; the end is told once, after the last byte. */
Test(vport_host, input_waits_for_room_then_ends)
{
	cr_assert_eq(vport_host_start_output(&host, &pcfg, room_cb, NULL), 0);
	host.deliver = deliver;
	host.end = end_cb;
	keep_room = 100;
	cr_assert_eq(vport_host_start_input(&host), 0);
	uint8_t data[300];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(i);
	cr_assert_eq(write(pipe_in[1], data, sizeof(data)), (ssize_t)sizeof(data));
	close(pipe_in[1]);
	pipe_in[1] = -1;
	/* It kept 100 and tries no more until told. */
	sem_wait(&delivered);
	pthread_mutex_lock(&keep_lock);
	cr_assert_eq(kept_len, 100);
	keep_room = 1000;
	pthread_mutex_unlock(&keep_lock);
	cr_assert_eq(sem_trywait(&end_sem), -1, "the end came before all the input");
	vport_host_input_room(&host);
	/* Bounded: without the wake-up it would never come. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	cr_assert_eq(sem_timedwait(&end_sem, &until), 0, "input_room did not wake the input");
	cr_assert_eq(kept_len, 300);
	cr_assert_eq(memcmp(kept, data, 300), 0);
	cr_assert_eq(ends, 1);
}

/* Stopping while the device takes nothing: the input thread does not hang. */
Test(vport_host, stop_while_the_device_is_full)
{
	cr_assert_eq(vport_host_start_output(&host, &pcfg, room_cb, NULL), 0);
	host.deliver = deliver;
	host.end = end_cb;
	keep_room = 0;
	cr_assert_eq(vport_host_start_input(&host), 0);
	cr_assert_eq(write(pipe_in[1], "abc", 3), 3);
	sem_wait(&delivered);
	vport_host_stop(&host);
	cr_assert_eq(ends, 0);
}
