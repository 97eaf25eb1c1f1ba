/* The console back end's output filter (vmm/cli/console.c): on by default where the output is a
 * terminal (a pseudo-terminal here), off for a pipe or a regular file, forced either way by
 * --console stdio,filter=on|off. The guest "prints" an OSC 52 clipboard write and a colour. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmm/cli/cli.h"
#include "vmm/cli/console.h"

static const char attack[] = "\x1b]52;c;SGk=\x07\x1b[31mRED";
static const char shown[] = "^[]52;c;SGk=^G^[[31mRED";

/* A pseudo-terminal: its master (returned) and the slave's path. */
static int open_pty(char *slave, size_t len)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(m, 0);
	cr_assert_eq(grantpt(m), 0);
	cr_assert_eq(unlockpt(m), 0);
	cr_assert_eq(ptsname_r(m, slave, len), 0);
	return m;
}

/* Read what came out of fd (all of it there is within a short wait), NUL-terminated. */
static const char *drain(int fd)
{
	static char buf[256];
	size_t used = 0;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (used < sizeof(buf) - 1 && poll(&p, 1, 200) == 1) {
		ssize_t n = read(fd, buf + used, sizeof(buf) - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	buf[used] = '\0';
	return buf;
}

/* The guest's bytes through a console on stdio, stdout being out_fd (stdin /dev/null: no raw
 * mode). */
static void write_through_stdio(int out_fd, enum console_filter_mode mode)
{
	int saved = dup(STDOUT_FILENO), null = open("/dev/null", O_RDONLY);
	cr_assert(saved >= 0 && null >= 0);
	cr_assert_eq(dup2(null, STDIN_FILENO), STDIN_FILENO);
	cr_assert_eq(dup2(out_fd, STDOUT_FILENO), STDOUT_FILENO);
	struct vm_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.console = CONSOLE_STDIO;
	cfg.console_filter = mode;
	struct console c;
	cr_assert_eq(console_open(&c, &cfg), 0);
	for (const char *p = attack; *p; p++)
		console_write(&c, (uint8_t)*p);
	console_close(&c);
	cr_assert_eq(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	close(null);
}

Test(console, terminal_output_is_filtered_by_default)
{
	char slave[64];
	int m = open_pty(slave, sizeof(slave));
	int s = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(s, 0);
	write_through_stdio(s, CONSOLE_FILTER_AUTO);
	cr_assert_str_eq(drain(m), shown);
	write_through_stdio(s, CONSOLE_FILTER_OFF);
	cr_assert_str_eq(drain(m), attack, "filter=off: the guest's bytes as they are");
	close(s);
	close(m);
}

Test(console, pipe_output_is_raw_unless_asked)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	write_through_stdio(p[1], CONSOLE_FILTER_AUTO);
	cr_assert_str_eq(drain(p[0]), attack, "a pipe gets the guest's bytes by default");
	write_through_stdio(p[1], CONSOLE_FILTER_ON);
	cr_assert_str_eq(drain(p[0]), shown, "filter=on filters a pipe too");
	close(p[0]);
	close(p[1]);
}

static void write_through_file(const char *path)
{
	struct vm_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.console = CONSOLE_FILE;
	cfg.console_path = path;
	cfg.console_path_len = strlen(path);
	struct console c;
	cr_assert_eq(console_open(&c, &cfg), 0);
	for (const char *p = attack; *p; p++)
		console_write(&c, (uint8_t)*p);
	console_close(&c);
}

/* --console file=: a regular file keeps the guest's bytes (a log), a file that is a terminal
 * is filtered. */
Test(console, file_output_is_filtered_when_it_is_a_terminal)
{
	char path[] = "/tmp/minivmm-console-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	write_through_file(path);
	cr_assert_str_eq(drain(fd), attack);
	close(fd);
	unlink(path);

	char slave[64];
	int m = open_pty(slave, sizeof(slave));
	int keep = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC); /* the pty stays up in between */
	cr_assert_geq(keep, 0);
	write_through_file(slave);
	cr_assert_str_eq(drain(m), shown);
	close(keep);
	close(m);
}

/* COM1's bytes and hvc0's buffers share the file's max-size: the file stops at it exactly. */
Test(console, file_cap_holds_for_buffers_and_bytes)
{
	char path[] = "/tmp/minivmm-console-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	struct vm_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.console = CONSOLE_FILE;
	cfg.console_path = path;
	cfg.console_path_len = strlen(path);
	cfg.console_max_bytes = 10;
	struct console c;
	cr_assert_eq(console_open(&c, &cfg), 0);
	console_write(&c, 'A');
	console_write_buf(&c, (const uint8_t *)"0123456789", 10);
	console_write(&c, 'B');
	console_write_buf(&c, (const uint8_t *)"xyz", 3);
	console_close(&c);
	cr_assert_str_eq(drain(fd), "A012345678");
	close(fd);
	unlink(path);
}

/* A buffer is filtered as its bytes one by one would be. */
Test(console, buffers_are_filtered_like_bytes)
{
	char slave[64];
	int m = open_pty(slave, sizeof(slave));
	int s = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(s, 0);
	struct vm_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.console = CONSOLE_FILE;
	cfg.console_path = slave;
	cfg.console_path_len = strlen(slave);
	struct console c;
	cr_assert_eq(console_open(&c, &cfg), 0);
	console_write_buf(&c, (const uint8_t *)attack, strlen(attack));
	console_close(&c);
	cr_assert_str_eq(drain(m), shown);
	close(s);
	close(m);
}

static char err[256];

Test(console, cli_takes_a_filter_for_stdio_only)
{
	struct vm_config cfg;
	char *on[] = {"minivmm", "--kernel", "k", "--console", "stdio,filter=on"};
	cr_assert_eq(cli_parse(5, on, &cfg, err, sizeof(err)), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.console, CONSOLE_STDIO);
	cr_assert_eq(cfg.console_filter, CONSOLE_FILTER_ON);
	char *off[] = {"minivmm", "--kernel", "k", "--console", "stdio,filter=off"};
	cr_assert_eq(cli_parse(5, off, &cfg, err, sizeof(err)), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.console_filter, CONSOLE_FILTER_OFF);
	char *dflt[] = {"minivmm", "--kernel", "k", "--console", "stdio"};
	cr_assert_eq(cli_parse(5, dflt, &cfg, err, sizeof(err)), CLI_RUN, "%s", err);
	cr_assert_eq(cfg.console_filter, CONSOLE_FILTER_AUTO);
	const char *bad[] = {"stdio,filter=maybe", "stdio,filter=", "stdio,filter",
			     "none,filter=on", "stdio,filter=on,x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = {"minivmm", "--kernel", "k", "--console", (char *)bad[i]};
		cr_assert_eq(cli_parse(5, argv, &cfg, err, sizeof(err)), CLI_ERROR,
			     "accepted --console %s", bad[i]);
		cr_assert(strstr(err, "stdio[,filter=on|off]"), "%s", err);
	}
}
