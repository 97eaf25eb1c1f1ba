/* The control socket's remover (sock_reaper_main, run as a child with its two pipes on fds 3
 * and 4 and the socket's directory on fd 5): nothing is removed while the VMM lives, the
 * socket is removed once the VMM's end of the pipe closes, a socket that replaced it meanwhile
 * is left alone, misuse removes nothing, and a directory swapped for a symlink on the way to
 * the socket cannot turn the removal elsewhere. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dir_swap.h"
#include "vmm/api/sock_reaper.h"

static char path[64];
static const char *name;
static int dir_fd = -1; /* path's directory, as the VMM pins it */
static int sock_fd = -1;

static void bind_socket(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	sock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(sock_fd, 0);
	cr_assert_eq(bind(sock_fd, (struct sockaddr *)&a, sizeof(a)), 0, "%s", strerror(errno));
}

static void setup(void)
{
	snprintf(path, sizeof(path), "/tmp/minivmm-reaper-%d.sock", (int)getpid());
	name = path + strlen("/tmp/");
	dir_fd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dir_fd, 0);
	unlink(path);
	bind_socket();
}

static void teardown(void)
{
	close(sock_fd);
	close(dir_fd);
	unlink(path);
}

/* The helper as a child: returns its pid; *alive_w and *done_r are the VMM's ends. With
 * no_pipe, fd 3 is not a pipe the helper can read. */
static pid_t start_helper(int *alive_w, int *done_r, bool no_pipe)
{
	int alive[2], done[2];
	cr_assert_eq(pipe2(alive, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(done, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int a = dup(alive[0]), d = dup(done[1]);
		if (no_pipe) {
			close(a);
			a = open("/dev/null", O_WRONLY);
		}
		int dir = fcntl(dir_fd, F_DUPFD, 6);
		dup2(a, 3);
		dup2(d, 4);
		dup2(dir, 5);
		char *argv[] = {"minivmm", SOCK_REAPER_ARG, path, (char *)name, NULL};
		_exit(sock_reaper_main(4, argv));
	}
	close(alive[0]);
	close(done[1]);
	*alive_w = alive[1];
	*done_r = done[0];
	return pid;
}

/* Until the helper blocks reading fd 3 (/proc/PID/syscall: "0 0x3 ..."), i.e. has taken note
 * of the socket and waits for the VMM's end; false if it never does (it exited, say). */
static bool waiting_for_the_vmm(pid_t pid)
{
	char file[64], buf[128];
	snprintf(file, sizeof(file), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 5000; i++) {
		FILE *f = fopen(file, "r");
		bool reading = f && fgets(buf, sizeof(buf), f) && !strncmp(buf, "0 0x3 ", 6);
		if (f)
			fclose(f);
		if (reading)
			return true;
		if (waitpid(pid, NULL, WNOHANG) != 0)
			return false;
		usleep(1000);
	}
	return false;
}

static int finish(pid_t pid, int done_r)
{
	char c;
	ssize_t n = read(done_r, &c, 1);
	close(done_r);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	return n == 1 ? WEXITSTATUS(status) : -1;
}

Test(sock_reaper, removes_the_socket_when_the_vmm_ends, .init = setup, .fini = teardown)
{
	int alive_w, done_r;
	pid_t pid = start_helper(&alive_w, &done_r, false);
	bool waited = waiting_for_the_vmm(pid);
	cr_assert_eq(access(path, F_OK), 0, "removed while the VMM lives");
	cr_assert(waited, "the helper did not wait for the VMM's end");
	close(alive_w); /* what the VMM's exit, or its death, does */
	cr_assert_eq(finish(pid, done_r), 0);
	cr_assert_neq(access(path, F_OK), 0, "the socket was left behind");
}

/* A chmod or chown changes the socket's change time, not its identity (test_control_socket
 * chmods it; the helper compared change times and left it behind). */
Test(sock_reaper, removes_the_socket_after_a_chmod, .init = setup, .fini = teardown)
{
	int alive_w, done_r;
	pid_t pid = start_helper(&alive_w, &done_r, false);
	cr_assert(waiting_for_the_vmm(pid));
	struct timespec pause = {.tv_nsec = 20 * 1000 * 1000}; /* a coarse clock must tick */
	nanosleep(&pause, NULL);
	cr_assert_eq(chmod(path, 0666), 0);
	cr_assert_eq(chmod(path, 0600), 0);
	close(alive_w);
	cr_assert_eq(finish(pid, done_r), 0);
	cr_assert_neq(access(path, F_OK), 0, "the socket was left behind after a chmod");
}

Test(sock_reaper, leaves_a_socket_that_replaced_it, .init = setup, .fini = teardown)
{
	int alive_w, done_r;
	pid_t pid = start_helper(&alive_w, &done_r, false);
	cr_assert(waiting_for_the_vmm(pid));
	/* Another VMM replaced the (stale) socket at the same path. */
	close(sock_fd);
	cr_assert_eq(unlink(path), 0);
	bind_socket();
	close(alive_w);
	cr_assert_eq(finish(pid, done_r), 0);
	cr_assert_eq(access(path, F_OK), 0, "another VMM's socket was removed");
}

Test(sock_reaper, misuse_removes_nothing, .init = setup, .fini = teardown)
{
	int alive_w, done_r;
	pid_t pid = start_helper(&alive_w, &done_r, true);
	close(alive_w);
	char c;
	cr_assert_eq(read(done_r, &c, 1), 0, "no acknowledgement without a VMM");
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	close(done_r);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x", status);
	cr_assert_eq(access(path, F_OK), 0);
}

static struct dir_swap w;

static void swap_setup(void)
{
	dir_swap_setup(&w);
	snprintf(path, sizeof(path), "%s", w.sock_path);
	name = DIR_SWAP_NAME;
}

static void swap_teardown(void)
{
	dir_swap_teardown(&w);
}

/* The helper removes the socket by its name in the directory pinned when it was bound, not by
 * path: with the socket's directory swapped for a symlink to another directory again and again
 * (a user owning the directory above can), it never removes the other directory's file of the
 * same name. By path it did, on the first to the 13th try (issue 34). */
Test(sock_reaper, removes_nothing_elsewhere_while_a_directory_is_swapped, .init = swap_setup,
     .fini = swap_teardown)
{
	for (int i = 0; i < 200; i++) {
		bind_socket();
		dir_fd = open(w.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(dir_fd, 0);
		int alive_w, done_r;
		pid_t pid = start_helper(&alive_w, &done_r, false);
		cr_assert(waiting_for_the_vmm(pid));
		dir_swap_start(&w);
		close(alive_w);
		int rc = finish(pid, done_r);
		dir_swap_stop(&w);
		cr_assert(dir_swap_victim_intact(&w), "try %d: the helper removed %s", i, w.victim);
		cr_assert_eq(rc, 0);
		struct stat st;
		cr_assert_neq(fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW), 0,
			      "try %d: the socket was left behind", i);
		close(sock_fd);
		close(dir_fd);
	}
}
