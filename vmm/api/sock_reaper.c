#include "sock_reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"

enum { ALIVE_FD = 3, DONE_FD = 4, DIR_FD = 5 };

extern char **environ;

int sock_reaper_start(struct sock_reaper *r, const char *path, int dir_fd, const char *name)
{
	int alive[2], done[2];
	r->pid = -1;
	r->alive_fd = r->done_fd = -1;
	/* Above the helper's numbers, so that no dup2 below overwrites it before it is moved. */
	int dir = fcntl(dir_fd, F_DUPFD_CLOEXEC, DIR_FD + 1);
	if (dir < 0)
		goto fail;
	if (pipe2(alive, O_CLOEXEC) < 0) {
		close(dir);
		goto fail;
	}
	if (pipe2(done, O_CLOEXEC) < 0) {
		close(alive[0]);
		close(alive[1]);
		close(dir);
		goto fail;
	}
	/* A fresh image (exec): the helper shares no memory with the VMM, and spawning copies
	 * none of it (guest RAM). glibc's dup2 onto the same number clears close-on-exec. The
	 * termination signals stay blocked (inherited mask): a Ctrl-C on the terminal's process
	 * group stops the VMM, whose end the helper then sees. */
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, alive[0], ALIVE_FD);
	posix_spawn_file_actions_adddup2(&fa, done[1], DONE_FD);
	posix_spawn_file_actions_adddup2(&fa, dir, DIR_FD);
	char *argv[] = {"minivmm", SOCK_REAPER_ARG, (char *)path, (char *)name, NULL};
	int rc = posix_spawn(&r->pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(alive[0]);
	close(done[1]);
	close(dir);
	if (rc) {
		close(alive[1]);
		close(done[0]);
		errno = rc;
		goto fail;
	}
	r->alive_fd = alive[1];
	r->done_fd = done[0];
	return 0;
fail:
	log_warn("control socket %s: cannot start its remover (%s): it will be left behind", path,
		 strerror(errno));
	return -1;
}

void sock_reaper_stop(struct sock_reaper *r)
{
	if (r->alive_fd < 0)
		return;
	close(r->alive_fd);
	char c;
	while (read(r->done_fd, &c, 1) < 0 && errno == EINTR)
		;
	close(r->done_fd);
	r->alive_fd = r->done_fd = -1;
}

int sock_reaper_main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	const char *path = argv[2], *name = argv[3];
	prctl(PR_SET_NAME, "minivmm-sockrm");
	/* Nothing of the VMM's but the two pipes, the directory and stderr (for a warning). */
	close(STDIN_FILENO);
	close(STDOUT_FILENO);
	syscall(SYS_close_range, DIR_FD + 1, ~0U, 0);
	/* Only by name in the pinned directory, never by path (sock_reaper.h). */
	struct stat bound, now;
	bool known =
	    fstatat(DIR_FD, name, &bound, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(bound.st_mode);
	char buf[64];
	ssize_t n;
	while ((n = read(ALIVE_FD, buf, sizeof(buf))) != 0)
		if (n < 0 && errno != EINTR)
			return 1; /* no VMM to wait for (misuse): remove nothing */
	/* Only the socket the VMM bound: another VMM may have replaced a stale one since, and a
	 * file system may give the new one the freed inode number (its bind sets a new
	 * modification time). Not the change time: a chmod or chown of the socket (a user
	 * opening it to a group) changes that, and the socket was left behind. */
	if (known && fstatat(DIR_FD, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    now.st_dev == bound.st_dev && now.st_ino == bound.st_ino &&
	    now.st_mtim.tv_sec == bound.st_mtim.tv_sec &&
	    now.st_mtim.tv_nsec == bound.st_mtim.tv_nsec && unlinkat(DIR_FD, name, 0) < 0)
		fprintf(stderr, "minivmm: warning: control socket %s left behind: %s\n", path,
			strerror(errno));
	ssize_t w = write(DONE_FD, "x", 1);
	(void)w;
	return 0;
}
