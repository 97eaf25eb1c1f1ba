/* A directory swapped with a symlink in a loop (dir_swap.h). */
#include "dir_swap.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void dir_swap_setup(struct dir_swap *w)
{
	snprintf(w->base, sizeof(w->base), "/tmp/minivmm-swap-XXXXXX");
	cr_assert_not_null(mkdtemp(w->base));
	char p[40];
	snprintf(p, sizeof(p), "%s/root", w->base);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(w->victim, sizeof(w->victim), "%s/" DIR_SWAP_NAME, p);
	int fd = open(w->victim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/user", w->base);
	cr_assert_eq(mkdir(p, 0755), 0);
	w->user_fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(w->user_fd, 0);
	cr_assert_eq(mkdirat(w->user_fd, "d", 0755), 0);
	snprintf(p, sizeof(p), "%s/root", w->base);
	cr_assert_eq(symlinkat(p, w->user_fd, "alt"), 0);
	snprintf(w->dir, sizeof(w->dir), "%s/user/d", w->base);
	snprintf(w->sock_path, sizeof(w->sock_path), "%s/" DIR_SWAP_NAME, w->dir);
}

void dir_swap_once(struct dir_swap *w)
{
	cr_assert_eq(renameat2(w->user_fd, "d", w->user_fd, "alt", RENAME_EXCHANGE), 0);
}

static void *swapper(void *arg)
{
	struct dir_swap *w = arg;
	while (!atomic_load(&w->stop))
		if (renameat2(w->user_fd, "d", w->user_fd, "alt", RENAME_EXCHANGE) == 0)
			atomic_fetch_add(&w->swaps, 1);
	return NULL;
}

void dir_swap_start(struct dir_swap *w)
{
	atomic_store(&w->stop, false);
	atomic_store(&w->swaps, 0);
	cr_assert_eq(pthread_create(&w->thread, NULL, swapper, w), 0);
	while (atomic_load(&w->swaps) < 2)
		sched_yield();
}

void dir_swap_stop(struct dir_swap *w)
{
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	struct stat st;
	cr_assert_eq(fstatat(w->user_fd, "d", &st, AT_SYMLINK_NOFOLLOW), 0);
	if (!S_ISDIR(st.st_mode))
		cr_assert_eq(renameat2(w->user_fd, "d", w->user_fd, "alt", RENAME_EXCHANGE), 0);
}

bool dir_swap_victim_intact(const struct dir_swap *w)
{
	struct stat st;
	return lstat(w->victim, &st) == 0 && S_ISREG(st.st_mode);
}

void dir_swap_teardown(struct dir_swap *w)
{
	close(w->user_fd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", w->base);
	cr_assert_eq(system(cmd), 0);
}
