#include "file_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/user_file.h"

int read_whole_file(const char *path, const char *what, size_t max_size, uint8_t **buf,
		    size_t *size)
{
	struct stat st;
	int fd = open_user_file(path, O_RDONLY, 0, USER_FILE_REG, &st);
	if (fd == USER_FILE_WRONG_KIND) {
		log_error("%s '%s' is %s, not a regular file", what, path,
			  user_file_kind(st.st_mode));
		return -1;
	}
	if (fd < 0) {
		log_error("cannot open %s '%s': %s", what, path, strerror(errno));
		return -1;
	}
	if ((uint64_t)st.st_size > max_size) {
		log_error("%s '%s' is %lld bytes, larger than guest memory allows", what, path,
			  (long long)st.st_size);
		close(fd);
		return -1;
	}
	size_t len = (size_t)st.st_size;
	uint8_t *p = malloc(len ? len : 1);
	if (!p) {
		log_error("out of memory reading %s '%s'", what, path);
		close(fd);
		return -1;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t n = read(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_error("cannot read %s '%s': %s", what, path,
				  n < 0 ? strerror(errno) : "file shrank while reading");
			free(p);
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	close(fd);
	*buf = p;
	*size = len;
	return 0;
}

int write_whole_file(const char *path, const char *what, const uint8_t *buf, size_t size)
{
	struct stat st;
	int fd = open_user_file(path, O_WRONLY | O_CREAT | O_TRUNC, 0644, USER_FILE_REG, &st);
	if (fd == USER_FILE_WRONG_KIND) {
		log_error("%s '%s' is %s, not a regular file", what, path,
			  user_file_kind(st.st_mode));
		return -1;
	}
	if (fd < 0) {
		log_error("cannot create %s '%s': %s", what, path, strerror(errno));
		return -1;
	}
	ssize_t n = write(fd, buf, size);
	close(fd);
	if (n != (ssize_t)size) {
		log_error("cannot write %s '%s'", what, path);
		return -1;
	}
	return 0;
}
