/* The race of issue 34 item 4, for the unit tests: a directory on the way to the control
 * socket swapped again and again with a symlink to another directory (renameat2
 * RENAME_EXCHANGE), as a user who owns the directory above it can, while root removes the
 * socket. The other directory holds a file of the socket's name that must survive. */
#ifndef MINIVMM_TEST_DIR_SWAP_H
#define MINIVMM_TEST_DIR_SWAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define DIR_SWAP_NAME "vm.sock"

struct dir_swap {
	char base[32];	    /* a fresh directory under /tmp */
	char dir[48];	    /* base/user/d: the socket's directory */
	char sock_path[64]; /* base/user/d/vm.sock */
	char victim[64];    /* base/root/vm.sock: root's file of the same name */
	int user_fd;	    /* base/user, holding d and alt -> base/root */
	pthread_t thread;
	atomic_bool stop;
	atomic_ulong swaps;
};

void dir_swap_setup(struct dir_swap *w);
/* Swap d and alt once: d becomes the symlink, and the socket's directory is named alt. */
void dir_swap_once(struct dir_swap *w);
/* Start swapping d and alt; returns once the swapping runs. */
void dir_swap_start(struct dir_swap *w);
/* Stop, and put d back in its place. */
void dir_swap_stop(struct dir_swap *w);
/* Is the victim still there? */
bool dir_swap_victim_intact(const struct dir_swap *w);
void dir_swap_teardown(struct dir_swap *w);

#endif
