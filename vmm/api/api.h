/* The control socket (--api-sock): a Unix stream socket served on the I/O thread, one JSON
 * object per line in each direction. Requests: {"cmd":"status"}, {"cmd":"balloon-set","mib":N},
 * {"cmd":"pause"}, {"cmd":"resume"}, {"cmd":"shutdown"}, and {"cmd":"snapshot"} with the
 * snapshot's three new files attached (SCM_RIGHTS, snapshot_files.h); responses
 * {"ok":true,...} or {"ok":false,"error":"..."}. */
#ifndef MINIVMM_API_H
#define MINIVMM_API_H

#include <stddef.h>
#include <stdint.h>

struct vm;
struct api_server;

/* Longest request line; a longer one gets an error and the connection is closed. */
#define API_MAX_LINE 4096
/* Most descriptors one request may carry (a snapshot's files); more fail that request. */
#define API_MAX_FDS 3

/* Bind path and serve it on vm->loop. A stale socket file (nobody listening) is replaced; a
 * live one (another minivmm) or a file that is not a socket is refused. NULL (logged) on
 * failure. The file is created 0600 and only peers of minivmm's euid or root are served; at
 * most 16 clients (a newcomer evicts the longest idle), each dropped after 10 s idle. Call
 * before other threads start (it sets the umask around bind). */
struct api_server *api_server_start(struct vm *vm, const char *path);
/* Close every connection and the listening socket and remove the socket file. Call once the
 * event loop has stopped. */
void api_server_stop(struct api_server *s);

/* Handle one request line (no newline) with the nfds descriptors that came with it (nfds -1:
 * more than API_MAX_FDS came, and were closed); the caller closes them afterwards. Returns the
 * malloc'd response line (no newline), or NULL when out of memory. Runs on the I/O thread.
 * Exposed for unit tests. */
char *api_handle_request(struct vm *vm, const char *line, size_t len, const int *fds, int nfds);

/* Reply lines, for the device kinds' commands too: {"ok":false,"error":msg}, and
 * {"ok":true[,key:value]} (no key when key is NULL). malloc'd, or NULL when out of memory. */
char *api_error_response(const char *msg);
char *api_ok_response(const char *key, int64_t value);

#endif
