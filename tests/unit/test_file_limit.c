/* The sandboxed VMM's file size limit (vmm/sandbox/file_limit.c): what it is for a configuration
 * (the largest file the VM legitimately writes, or none for a console file without a cap), and that
 * once it is set a write, a truncation or a fallocate past it fails with EFBIG, on both disk
 * engines, while the process goes on (SIGXFSZ would kill it). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devices/backends/blk_io.h"
#include "vmm/sandbox/file_limit.h"

#define TIB (1ull << 40)

/* A sparse file of size bytes, open as flags (each test its own path: Criterion runs tests in
 * parallel). */
static int sparse_file(const char *tag, uint64_t size, int flags)
{
	char path[96];
	snprintf(path, sizeof(path), "/tmp/minivmm-file-limit-%d-%s", (int)getpid(), tag);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0, "%s", strerror(errno));
	int again = open(path, flags | O_CLOEXEC);
	close(fd);
	unlink(path);
	cr_assert_geq(again, 0);
	return again;
}

/* The largest file open for writing (a disk image) sets it; one open read-only (a kernel) does
 * not; guest RAM and the console's cap do when larger; a console file without a cap means no
 * limit. Sizes far above anything else this process has open. */
Test(file_limit, the_largest_file_the_vm_writes)
{
	struct vm_config cfg = {.memory_bytes = 256ull << 20, .console = CONSOLE_STDIO};
	int disk = sparse_file("disk", 2 * TIB, O_RDWR);
	int kernel = sparse_file("kernel", 3 * TIB, O_RDONLY);
	cr_assert_eq(file_limit_for(&cfg), 2 * TIB);
	cfg.memory_bytes = 4 * TIB;
	cr_assert_eq(file_limit_for(&cfg), 4 * TIB);
	cfg.memory_bytes = 256ull << 20;
	cfg.console = CONSOLE_FILE;
	cfg.console_max_bytes = 5 * TIB;
	cr_assert_eq(file_limit_for(&cfg), 5 * TIB);
	cfg.console_max_bytes = 0;
	cr_assert_eq(file_limit_for(&cfg), FILE_LIMIT_NONE);
	close(disk);
	close(kernel);
	/* with nothing that large open: a snapshot's state file at its largest, at least */
	cfg.console = CONSOLE_STDIO;
	cr_assert_geq(file_limit_for(&cfg), 64ull << 20);
}

#define LIMIT (1u << 20)

static char image[96];

static void note_result(void *opaque, struct blk_io *io, int64_t res)
{
	(void)io;
	*(int64_t *)opaque = res;
}

/* One write of 4 KiB at offset through the real disk engine; its result. */
static int64_t disk_write(bool use_uring, uint64_t offset)
{
	struct blk_image img;
	char err[160];
	if (blk_image_open(&img, image, false, false, use_uring, 8, err, sizeof(err)))
		_exit(30);
	static uint8_t buf[4096];
	struct iovec iov = {buf, sizeof(buf)};
	struct blk_io io = {
	    .op = BLK_IO_WRITE, .offset = offset, .len = sizeof(buf), .iov = &iov, .iovcnt = 1};
	int64_t res = 0;
	blk_image_submit(&img, &io);
	blk_image_kick(&img);
	blk_image_drain(&img, note_result, &res);
	blk_image_close(&img);
	return res;
}

static void writes_past_the_limit_fail(void)
{
	int fd = open(image, O_RDWR | O_CLOEXEC);
	char err[160];
	if (fd < 0 || file_limit_apply(LIMIT, err, sizeof(err)))
		_exit(20);
	if (pwrite(fd, "x", 1, LIMIT - 1) != 1)
		_exit(10); /* up to the limit: fine */
	if (pwrite(fd, "x", 1, LIMIT) != -1 || errno != EFBIG)
		_exit(11);
	if (ftruncate(fd, LIMIT + 1) != -1 || errno != EFBIG)
		_exit(12);
	if (fallocate(fd, 0, LIMIT, 4096) != -1 || errno != EFBIG)
		_exit(13);
	if (disk_write(false, LIMIT) != -EFBIG)
		_exit(14);
	if (disk_write(true, LIMIT) != -EFBIG)
		_exit(15);
	if (disk_write(true, 0) != 4096)
		_exit(16);
	struct stat st;
	if (fstat(fd, &st) || st.st_size != LIMIT)
		_exit(17);
	/* no limit asked for: none set */
	struct rlimit r;
	if (file_limit_apply(FILE_LIMIT_NONE, err, sizeof(err)) || getrlimit(RLIMIT_FSIZE, &r) ||
	    r.rlim_cur != LIMIT)
		_exit(18);
}

Test(file_limit, a_write_past_it_fails_and_the_process_goes_on)
{
	snprintf(image, sizeof(image), "/tmp/minivmm-file-limit-%d.img", (int)getpid());
	int fd = open(image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		writes_past_the_limit_fail();
		_exit(0);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	unlink(image);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}
