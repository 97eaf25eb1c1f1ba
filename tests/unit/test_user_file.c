/* Files the user names (kernel, initrd, --disk image, console file=, --dump-dtb) are opened
 * without blocking: a FIFO is refused at once, whoever holds its other end, instead of hanging
 * the VMM in open(). Every test has a time limit, so a regression fails instead of hanging. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/backends/blk_io.h"
#include "devices/virtio/blk.h"
#include "log_capture.h"
#include "base/user_file.h"
#include "vmm/cli/console.h"
#include "vmm/cli/file_util.h"
#include "vmm/kinds/kinds.h"
#include "vmm/cli/options.h"

static char dir[64], fifo[96], reg[96];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/minivmm-user-file.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(reg, sizeof(reg), "%s/file", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	int fd = open(reg, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "0123456789", 10), 10);
	close(fd);
	log_capture_clear();
}

static void teardown(void)
{
	unlink(fifo);
	unlink(reg);
	rmdir(dir);
}

TestSuite(user_file, .init = setup, .fini = teardown, .timeout = 10);

/* The last log lines mention every one of the strings. */
static void expect_logged(const char *a, const char *b)
{
	char *log = log_captured();
	cr_assert(strstr(log, a) && strstr(log, b), "no '%s' ... '%s' in the log: %s", a, b, log);
	free(log);
}

Test(user_file, fifo_refused_for_every_access_mode)
{
	static const int modes[] = {O_RDONLY, O_WRONLY, O_RDWR, O_WRONLY | O_CREAT | O_TRUNC};
	struct stat st;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		cr_assert_eq(open_user_file(fifo, modes[i], 0644,
					    USER_FILE_REG | USER_FILE_BLK | USER_FILE_CHR, &st),
			     USER_FILE_WRONG_KIND, "mode %#x", modes[i]);
		cr_assert(S_ISFIFO(st.st_mode));
		cr_assert_str_eq(user_file_kind(st.st_mode), "a FIFO");
	}
	/* A reader on the other end (a write-only open then succeeds): still refused. */
	int reader = open(fifo, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(reader, 0);
	cr_assert_eq(open_user_file(fifo, O_WRONLY, 0, USER_FILE_REG | USER_FILE_CHR, &st),
		     USER_FILE_WRONG_KIND);
	close(reader);
}

Test(user_file, kinds)
{
	struct stat st;
	int fd = open_user_file(reg, O_RDONLY, 0, USER_FILE_REG, &st);
	cr_assert_geq(fd, 0);
	cr_assert_eq(st.st_size, 10);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "O_NONBLOCK cleared on what is kept");
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	fd = open_user_file("/dev/null", O_WRONLY, 0, USER_FILE_REG | USER_FILE_CHR, &st);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	cr_assert_eq(open_user_file("/dev/null", O_WRONLY, 0, USER_FILE_REG, &st),
		     USER_FILE_WRONG_KIND);
	cr_assert_eq(open_user_file(dir, O_RDONLY, 0, USER_FILE_REG | USER_FILE_BLK, &st),
		     USER_FILE_WRONG_KIND);
	cr_assert_str_eq(user_file_kind(st.st_mode), "a directory");
	errno = 0;
	cr_assert_eq(open_user_file("/nonexistent/x", O_RDONLY, 0, USER_FILE_REG, &st), -1);
	cr_assert_eq(errno, ENOENT);
}

/* --kernel and --initrd. */
Test(user_file, read_whole_file_refuses_a_fifo)
{
	uint8_t *buf = NULL;
	size_t size = 0;
	cr_assert_eq(read_whole_file(fifo, "initrd", 1 << 20, &buf, &size), -1);
	cr_assert_null(buf);
	expect_logged(fifo, "initrd");
	expect_logged(fifo, "is a FIFO, not a regular file");
	cr_assert_eq(read_whole_file(reg, "kernel", 1 << 20, &buf, &size), 0);
	cr_assert_eq(size, 10);
	cr_assert_eq(memcmp(buf, "0123456789", 10), 0);
	free(buf);
}

/* --dump-dtb. */
Test(user_file, write_whole_file_refuses_a_fifo)
{
	static const uint8_t dtb[4] = {0xd0, 0x0d, 0xfe, 0xed};
	cr_assert_eq(write_whole_file(fifo, "--dump-dtb", dtb, sizeof(dtb)), -1);
	expect_logged(fifo, "--dump-dtb");
	expect_logged(fifo, "is a FIFO, not a regular file");
	int reader = open(fifo, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(reader, 0);
	cr_assert_eq(write_whole_file(fifo, "--dump-dtb", dtb, sizeof(dtb)), -1);
	uint8_t got[4];
	cr_assert_leq(read(reader, got, sizeof(got)), 0, "nothing written into the FIFO");
	close(reader);
	cr_assert_eq(write_whole_file(reg, "--dump-dtb", dtb, sizeof(dtb)), 0);
	struct stat st;
	cr_assert_eq(stat(reg, &st), 0);
	cr_assert_eq(st.st_size, 4, "truncated, then written");
}

static int open_console_file(struct console *c, const char *path)
{
	struct vm_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.console = CONSOLE_FILE;
	cfg.console_path = path;
	cfg.console_path_len = strlen(path);
	return console_open(c, &cfg);
}

/* --console file=: a regular file or a character device, never a FIFO. */
Test(user_file, console_file_refuses_a_fifo)
{
	struct console c;
	cr_assert_eq(open_console_file(&c, fifo), -1);
	expect_logged(fifo, "console file");
	expect_logged(fifo, "is a FIFO");
	cr_assert_eq(open_console_file(&c, "/dev/null"), 0);
	console_write(&c, 'x');
	console_close(&c);
	cr_assert_eq(open_console_file(&c, reg), 0);
	console_write(&c, 'x');
	console_close(&c);
	struct stat st;
	cr_assert_eq(stat(reg, &st), 0);
	cr_assert_eq(st.st_size, 1);
}

static int parse_disk(const char *fmt, const char *path, char *err, size_t errlen)
{
	char s[200];
	snprintf(s, sizeof(s), fmt, path);
	struct option_list opts;
	struct blk_options o;
	int fd;
	if (options_split(s, "--disk", &opts, err, errlen))
		return -2;
	int rc = blk_options_parse(&opts, &o, &fd, err, errlen);
	if (rc == 0)
		close(fd);
	return rc;
}

/* --disk path=, read-only and read-write, and blk_image_open (no --disk descriptor). */
Test(user_file, disk_refuses_a_fifo)
{
	static const char *const fmts[] = {"path=%s,readonly=on", "path=%s",
					   "path=%s,readonly=on,cache=none"};
	char err[300];
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		cr_assert_eq(parse_disk(fmts[i], fifo, err, sizeof(err)), -1, "%s", fmts[i]);
		cr_assert(strstr(err, fifo) && strstr(err, "is a FIFO"), "%s", err);
	}
	cr_assert_eq(parse_disk("path=%s", reg, err, sizeof(err)), 0, "%s", err);
	struct blk_image img;
	cr_assert_eq(blk_image_open(&img, fifo, true, false, false, 8, err, sizeof(err)), -1);
	cr_assert(strstr(err, fifo) && strstr(err, "is a FIFO"), "%s", err);
	cr_assert_eq(blk_image_open(&img, reg, false, false, false, 8, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(img.size, 10);
	blk_image_close(&img);
}
