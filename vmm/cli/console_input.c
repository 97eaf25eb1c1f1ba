#include "console_input.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "base/thread_sandbox.h"

ssize_t console_input_read(int in_fd, int wake_fd, void *buf, size_t len)
{
	for (;;) {
		struct pollfd fds[2] = {{.fd = in_fd, .events = POLLIN},
					{.fd = wake_fd, .events = POLLIN}};
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return CONSOLE_INPUT_STOP;
		}
		if (fds[1].revents)
			return CONSOLE_INPUT_STOP;
		if (!fds[0].revents)
			continue;
		/* Started before the process-wide filter: narrowed before the first input. */
		if (thread_sandbox_narrow(SANDBOX_CONSOLE_IN))
			return CONSOLE_INPUT_STOP;
		ssize_t n = read(in_fd, buf, len);
		/* EAGAIN: in_fd may be non-blocking (shared with another process), and poll's
		 * readiness may be gone by the read: wait again. */
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		return n;
	}
}
