/* RLIMIT_FSIZE for the sandboxed VMM (file_limit.h). */
#include "file_limit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/snapshot/snapshot_files.h"

/* Where /proc cannot be read: the descriptors looked at one by one, up to this many. */
#define FD_SCAN_MAX 4096

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The size of fd if it is a regular file open for writing, else 0. */
static uint64_t writable_size(int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_size;
}

static uint64_t largest_open_file(void)
{
	uint64_t largest = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		for (int fd = 0; fd < FD_SCAN_MAX; fd++)
			largest = max_u64(largest, writable_size(fd));
		return largest;
	}
	const struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			largest = max_u64(largest, writable_size(atoi(e->d_name)));
	closedir(d);
	return largest;
}

uint64_t file_limit_for(const struct vm_config *cfg)
{
	if (cfg->console == CONSOLE_FILE && cfg->console_max_bytes == 0)
		return FILE_LIMIT_NONE;
	uint64_t limit = max_u64(cfg->memory_bytes, (uint64_t)SNAPSHOT_STATE_MAX);
	if (cfg->console == CONSOLE_FILE)
		limit = max_u64(limit, cfg->console_max_bytes);
	return max_u64(limit, largest_open_file());
}

int file_limit_apply(uint64_t bytes, char *err, size_t errlen)
{
	if (bytes == FILE_LIMIT_NONE)
		return 0;
	if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR) {
		snprintf(err, errlen, "ignoring SIGXFSZ: %s", strerror(errno));
		return -1;
	}
	struct rlimit now;
	if (getrlimit(RLIMIT_FSIZE, &now)) {
		snprintf(err, errlen, "RLIMIT_FSIZE: %s", strerror(errno));
		return -1;
	}
	/* Only ever lower it: one the caller set already stays if it is tighter. */
	rlim_t cap =
	    now.rlim_max == RLIM_INFINITY || bytes < now.rlim_max ? (rlim_t)bytes : now.rlim_max;
	struct rlimit lim = {.rlim_cur = cap, .rlim_max = cap};
	if (now.rlim_cur != RLIM_INFINITY && now.rlim_cur < cap)
		lim.rlim_cur = now.rlim_cur;
	if (setrlimit(RLIMIT_FSIZE, &lim)) {
		snprintf(err, errlen, "setting RLIMIT_FSIZE: %s", strerror(errno));
		return -1;
	}
	return 0;
}
