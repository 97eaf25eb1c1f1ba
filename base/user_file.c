#include "user_file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <unistd.h>

static bool accepted(mode_t m, unsigned kinds)
{
	return (S_ISREG(m) && (kinds & USER_FILE_REG)) || (S_ISBLK(m) && (kinds & USER_FILE_BLK)) ||
	       (S_ISCHR(m) && (kinds & USER_FILE_CHR));
}

int open_user_file(const char *path, int flags, mode_t mode, unsigned kinds, struct stat *st)
{
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, mode);
	if (fd < 0) {
		/* A FIFO without a reader or a socket (ENXIO), a directory (EISDIR), O_DIRECT
		 * on a FIFO (EINVAL): what the file is says more than the errno does. */
		int e = errno;
		if (stat(path, st) == 0 && !accepted(st->st_mode, kinds))
			return USER_FILE_WRONG_KIND;
		errno = e;
		return -1;
	}
	if (fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (!accepted(st->st_mode, kinds)) {
		close(fd);
		return USER_FILE_WRONG_KIND;
	}
	/* Reads and writes block as usual (a terminal's console output must not spin on EAGAIN). */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

const char *user_file_kind(mode_t m)
{
	if (S_ISREG(m))
		return "a regular file";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	return "an unknown kind of file";
}
