/* The wait-and-read step of the console's and the --vport stdin ports' input threads
 * (vmm/cli/console_input.h): the bytes there are, the end of the input, an error, and a stop
 * that wins over waiting input. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vmm/cli/console_input.h"

static int fds[2], wake = -1;

static void setup(void)
{
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	wake = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(wake, 0);
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(wake);
}

TestSuite(console_input, .init = setup, .fini = teardown);

Test(console_input, reads_what_is_there_then_the_end)
{
	uint8_t buf[4];
	cr_assert_eq(write(fds[1], "abcdef", 6), 6);
	cr_assert_eq(console_input_read(fds[0], wake, buf, sizeof(buf)), 4);
	cr_assert_eq(memcmp(buf, "abcd", 4), 0);
	cr_assert_eq(console_input_read(fds[0], wake, buf, sizeof(buf)), 2);
	cr_assert_eq(memcmp(buf, "ef", 2), 0);
	close(fds[1]);
	fds[1] = -1;
	cr_assert_eq(console_input_read(fds[0], wake, buf, sizeof(buf)), 0);
}

/* Told to stop: it reads nothing more, even with input waiting. */
Test(console_input, a_stop_wins_over_waiting_input)
{
	uint8_t buf[4];
	uint64_t one = 1;
	cr_assert_eq(write(fds[1], "abc", 3), 3);
	cr_assert_eq(write(wake, &one, sizeof(one)), (ssize_t)sizeof(one));
	cr_assert_eq(console_input_read(fds[0], wake, buf, sizeof(buf)), CONSOLE_INPUT_STOP);
	cr_assert_eq(read(fds[0], buf, sizeof(buf)), 3, "the input was taken");
}

/* A read that fails is told as -1 with its errno (not retried, not an end). */
Test(console_input, a_failed_read_is_an_error)
{
	uint8_t buf[4];
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC); /* readable to poll, not to read */
	cr_assert_geq(fd, 0);
	errno = 0;
	cr_assert_eq(console_input_read(fd, wake, buf, sizeof(buf)), -1);
	cr_assert_eq(errno, EBADF);
	close(fd);
}
