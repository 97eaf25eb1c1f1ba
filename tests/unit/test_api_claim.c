/* The control socket's claim at start (a stale socket replaced) and its removal at stop
 * (vmm/api/api.c), while a directory on the way to it is swapped for a symlink to another
 * directory again and again (dir_swap.h): both happen in the directory pinned at start, so the
 * other directory's file of the same name survives. By path, a stale socket seen in one
 * directory was removed from the other. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dir_swap.h"
#include "vmm/api/api.h"
#include "vmm/kvm/vm.h"

static struct vm vm;
static struct vm_config cfg;

/* A socket bound at path that nobody listens on: what a VMM killed before it could remove it
 * leaves. */
static void leave_stale_socket(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	cr_assert_lt(strlen(path), sizeof(a.sun_path));
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
}

static struct dir_swap w;
static int dir = -1; /* the socket's directory, wherever it is moved */

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	memset(&cfg, 0, sizeof(cfg));
	vm.cfg = &cfg; /* no seccomp, no jail: the VMM's main thread removes the socket itself */
	cr_assert_eq(event_loop_init(&vm.loop), 0);
	dir_swap_setup(&w);
	dir = open(w.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dir, 0);
}

static void teardown(void)
{
	close(dir);
	dir_swap_teardown(&w);
	event_loop_destroy(&vm.loop);
}

static bool socket_left(void)
{
	struct stat st;
	return fstatat(dir, DIR_SWAP_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

TestSuite(api_claim, .init = setup, .fini = teardown);

Test(api_claim, replaces_a_stale_socket_only_in_its_directory)
{
	int started = 0;
	for (int i = 0; i < 500; i++) {
		leave_stale_socket(w.sock_path);
		dir_swap_start(&w);
		/* Refused when the pin finds the other directory (its file is no socket). */
		struct api_server *s = api_server_start(&vm, w.sock_path);
		dir_swap_stop(&w);
		cr_assert(dir_swap_victim_intact(&w), "try %d: %s was removed", i, w.victim);
		api_server_stop(s);
		cr_assert(!s || !socket_left(), "try %d: the socket was left behind", i);
		started += s != NULL;
		unlinkat(dir, DIR_SWAP_NAME, 0); /* the stale socket where the start was refused */
	}
	cr_assert_gt(started, 0, "the server never started");
}

/* The directory moved away and a symlink to another put in its place while the VMM runs: the
 * socket is removed from where it is, and the other directory's file is left alone. */
Test(api_claim, removes_the_socket_from_its_directory_at_stop)
{
	struct api_server *s = api_server_start(&vm, w.sock_path);
	cr_assert_not_null(s);
	dir_swap_once(&w);
	api_server_stop(s);
	cr_assert(dir_swap_victim_intact(&w), "%s was removed", w.victim);
	cr_assert_not(socket_left(), "the socket was left behind");
}
