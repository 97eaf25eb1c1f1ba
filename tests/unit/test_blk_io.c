/* The io_uring ring behind a disk is restricted to what the blk engine issues: a read works,
 * an open (or any other operation, or registering more resources) is refused by the kernel. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/backends/blk_io.h"

static char img_path[64];
static struct blk_image img;

static void setup(void)
{
	strcpy(img_path, "/tmp/minivmm-blk-io-test.XXXXXX");
	int fd = mkstemp(img_path);
	cr_assert_geq(fd, 0);
	char block[4096];
	memset(block, 0x5a, sizeof(block));
	cr_assert_eq(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
	close(fd);
	char err[160];
	cr_assert_eq(blk_image_open(&img, img_path, false, false, true, 8, err, sizeof(err)), 0,
		     "%s", err);
	if (!img.uring)
		cr_skip_test("io_uring unavailable here: nothing to restrict");
}

static void teardown(void)
{
	blk_image_close(&img);
	unlink(img_path);
}

TestSuite(blk_io_ring, .init = setup, .fini = teardown);

/* Submits the prepared SQE and returns its completion's result. */
static int complete_one(void)
{
	cr_assert_eq(io_uring_submit(&img.ring), 1);
	struct io_uring_cqe *cqe;
	cr_assert_eq(io_uring_wait_cqe(&img.ring, &cqe), 0);
	int res = cqe->res;
	io_uring_cqe_seen(&img.ring, cqe);
	return res;
}

Test(blk_io_ring, a_read_works)
{
	char buf[512] = {0};
	struct iovec iov = {buf, sizeof(buf)};
	io_uring_prep_readv(io_uring_get_sqe(&img.ring), img.fd, &iov, 1, 1024);
	cr_assert_eq(complete_one(), (int)sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		cr_assert_eq((unsigned char)buf[i], 0x5a, "byte %zu", i);
}

Test(blk_io_ring, an_open_is_refused)
{
	char created[80];
	snprintf(created, sizeof(created), "%s.created", img_path);
	io_uring_prep_openat(io_uring_get_sqe(&img.ring), AT_FDCWD, created,
			     O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	int res = complete_one();
	if (res >= 0) {
		close(res);
		unlink(created);
	}
	cr_assert_eq(res, -EACCES, "openat through the ring: %d", res);
	cr_assert_neq(access(created, F_OK), 0);
}

Test(blk_io_ring, registering_more_is_refused)
{
	int fds[1] = {img.fd};
	cr_assert_eq(io_uring_register_files(&img.ring, fds, 1), -EACCES);
}
