#include "fd_passing.h"

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

union fd_control {
	struct cmsghdr align;
	char buf[CMSG_SPACE(sizeof(int) * FD_PASSING_MAX)];
};

ssize_t send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union fd_control ctl;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > 0 && nfds <= FD_PASSING_MAX) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL);
}

ssize_t recv_with_fds(int sock, void *buf, size_t len, int flags, int *fds, int max, int *nfds)
{
	union fd_control ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl)};
	*nfds = 0;
	ssize_t n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	bool too_many = mh.msg_flags & MSG_CTRUNC; /* the kernel closed the rest */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else {
				close(fd);
				too_many = true;
			}
		}
	}
	if (too_many) {
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = -1;
	}
	return n;
}
