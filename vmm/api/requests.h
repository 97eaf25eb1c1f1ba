/* The control socket's requests and answers: {"cmd":"status"}, {"cmd":"balloon-set","mib":N},
 * {"cmd":"pause"}, {"cmd":"resume"}, {"cmd":"shutdown"}, and {"cmd":"snapshot"} with the
 * snapshot's three new files attached (SCM_RIGHTS, snapshot_files.h); responses
 * {"ok":true,...} or {"ok":false,"error":"..."}. */
#ifndef MINIVMM_API_REQUESTS_H
#define MINIVMM_API_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

struct vm;

/* Most descriptors one request may carry (a snapshot's files); more fail that request. */
#define API_MAX_FDS 3

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
