/* The control socket (--api-sock): a Unix stream socket served on the I/O thread, one JSON
 * object per line in each direction (the requests and their answers: requests.h). */
#ifndef MINIVMM_API_H
#define MINIVMM_API_H

#include <stddef.h>
#include <stdint.h>

#include "requests.h"

struct vm;
struct api_server;

/* Longest request line; a longer one gets an error and the connection is closed. */
#define API_MAX_LINE 4096

/* Bind path and serve it on vm->loop. A stale socket file (nobody listening) is replaced; a
 * live one (another minivmm) or a file that is not a socket is refused. NULL (logged) on
 * failure. The file is created 0600 and only peers of minivmm's euid or root are served; at
 * most 16 clients (a newcomer evicts the longest idle), each dropped after 10 s idle. Call
 * before other threads start (it sets the umask around bind). */
struct api_server *api_server_start(struct vm *vm, const char *path);
/* Close every connection and the listening socket and remove the socket file. Call once the
 * event loop has stopped. */
void api_server_stop(struct api_server *s);

#endif
