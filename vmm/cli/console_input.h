/* The wait-and-read step shared by the threads that feed host input to the guest (the console's,
 * console.c, and each --vport NAME:stdin port's, vport_host.c): until there is input or the
 * thread is told to stop, and the thread's seccomp filter narrowed before its first read. */
#ifndef MINIVMM_CONSOLE_INPUT_H
#define MINIVMM_CONSOLE_INPUT_H

#include <stddef.h>
#include <sys/types.h>

/* Returned when wake_fd was signalled, or poll or the narrowing failed: the thread must end. */
#define CONSOLE_INPUT_STOP ((ssize_t)-2)

/* Waits until in_fd is readable or wake_fd is signalled, then reads at most len bytes of in_fd
 * into buf (EINTR and EAGAIN retried). Returns what read returned (> 0 bytes, 0 at the end of the
 * input, -1 with errno on an error) or CONSOLE_INPUT_STOP. */
ssize_t console_input_read(int in_fd, int wake_fd, void *buf, size_t len);

#endif
