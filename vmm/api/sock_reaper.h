/* The control socket's file is removed when the VMM ends, however it ends (a refused system
 * call, a crash, SIGKILL), by a small helper process started before the sandbox: no VMM thread
 * may unlink once the seccomp filters are on (a filter cannot tell one path from another, so
 * allowing unlinkat would allow removing any file), and a jailed VMM keeps no descriptor of
 * the socket's directory outside the jail. The helper holds that directory instead, pinned
 * when the socket was bound, and removes the socket's name in it: no path is resolved at exit,
 * so renaming a directory on the way (a user who owns one swapping it for a symlink to a
 * root-owned directory) cannot turn the removal to a file elsewhere. */
#ifndef MINIVMM_SOCK_REAPER_H
#define MINIVMM_SOCK_REAPER_H

#include <sys/types.h>

/* The hidden first argument that runs the helper instead of a VMM. */
#define SOCK_REAPER_ARG "__remove-socket-at-exit"

struct sock_reaper {
	pid_t pid;
	int alive_fd; /* its closing (by sock_reaper_stop or the VMM's end) starts the removal */
	int done_fd;  /* readable (or at end of file) once the helper is done */
};

/* Start the helper for the socket already bound as name in the directory dir_fd (an O_PATH
 * descriptor, which the helper gets a copy of; path is for messages): it removes name from
 * that directory when the VMM stops or dies, if name is still that socket. Returns 0, or -1
 * (logged; the socket would be left). */
int sock_reaper_start(struct sock_reaper *r, const char *path, int dir_fd, const char *name);

/* Remove the socket now and wait until it is gone. Needs only close and read. */
void sock_reaper_stop(struct sock_reaper *r);

/* The helper: minivmm SOCK_REAPER_ARG PATH NAME, with the VMM's alive pipe on fd 3, its done
 * pipe on fd 4 and the socket's directory on fd 5. Returns the exit status. */
int sock_reaper_main(int argc, char **argv);

#endif
