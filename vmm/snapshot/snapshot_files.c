#include "snapshot_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/api/json.h"
#include "crc32.h"
#include "mem_holes.h"

#define PAGE	     4096
#define HEADER_MAX   4096
#define MEM_CHUNK    (1u << 20)
#define CREATE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW)

const char *const snapshot_file_names[SNAPSHOT_NR_FILES] = {
    [SNAPSHOT_FILE_MEMORY] = SNAPSHOT_MEMORY,
    [SNAPSHOT_FILE_STATE] = SNAPSHOT_STATE,
    [SNAPSHOT_FILE_HEADER] = SNAPSHOT_HEADER,
};

static int write_all(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* Is the page at byte j of a region (p, size; at byte base of the mapping) all zeros? A page
 * the host never gave memory is, without being read (mem_holes.h: reading it would fault it in);
 * a last partial page counts as data. */
static bool zero_page(struct mem_holes *h, const uint8_t *p, uint64_t size, uint64_t base,
		      uint64_t j)
{
	static const uint8_t zero[PAGE];
	return size - j >= PAGE && (mem_holes_is_hole(h, base + j) || !memcmp(p + j, zero, PAGE));
}

/* Guest RAM, region after region; all-zero pages stay holes. *crc covers every byte (the
 * holes through crc32_zeros, without reading them again). */
static int write_memory(int fd, const struct guest_mem *mem, uint32_t *crc)
{
	if (ftruncate(fd, (off_t)mem->ram_size) < 0)
		return -1;
	struct mem_holes *h = malloc(sizeof(*h));
	if (!h)
		return -1;
	mem_holes_init(h, mem);
	uint32_t c = 0;
	off_t off = 0;
	int rc = 0;
	for (int r = 0; r < mem->nr_regions && !rc; r++) {
		const uint8_t *p = mem->regions[r].hva;
		uint64_t size = mem->regions[r].size, base = (uint64_t)(p - mem->mapping);
		for (uint64_t j = 0; j < size && !rc;) {
			/* A run of pages with data, then one of zero pages. */
			uint64_t k = j;
			while (k < size && !zero_page(h, p, size, base, k))
				k += size - k < PAGE ? size - k : PAGE;
			if (k > j) {
				c = crc32_update(c, p + j, k - j);
				rc = write_all(fd, p + j, k - j, off + (off_t)j);
			}
			uint64_t z = k;
			while (z < size && zero_page(h, p, size, base, z))
				z += PAGE;
			c = crc32_zeros(c, z - k);
			j = z;
		}
		off += (off_t)size;
	}
	free(h);
	*crc = c;
	return rc ? rc : fsync(fd);
}

/* The CRC-32 of a file of size bytes, reading only its data (SEEK_DATA/SEEK_HOLE): a sparse
 * snapshot of a mostly idle guest is checked in milliseconds, not at disk speed over all its
 * RAM. 0 and *crc, or -1 (a read failed or came up short). */
static int file_crc(int fd, uint64_t size, uint32_t *crc)
{
	uint8_t *buf = malloc(MEM_CHUNK);
	if (!buf)
		return -1;
	uint32_t c = 0;
	uint64_t off = 0;
	int rc = 0;
	while (off < size) {
		off_t data = lseek(fd, (off_t)off, SEEK_DATA);
		uint64_t d = data < 0 ? size : (uint64_t)data; /* ENXIO: only a hole is left */
		if (d > size)
			d = size;
		c = crc32_zeros(c, d - off);
		off = d;
		if (off >= size)
			break;
		off_t hole = lseek(fd, (off_t)off, SEEK_HOLE);
		uint64_t end = hole < 0 || (uint64_t)hole > size ? size : (uint64_t)hole;
		while (off < end) {
			uint64_t want = end - off < MEM_CHUNK ? end - off : MEM_CHUNK;
			ssize_t n = pread(fd, buf, want, (off_t)off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				rc = -1;
				goto out;
			}
			c = crc32_update(c, buf, (size_t)n);
			off += (uint64_t)n;
		}
	}
out:
	free(buf);
	*crc = c;
	return rc;
}

int snapshot_create_files(const char *dir, int fds[SNAPSHOT_NR_FILES], char *err, size_t errlen)
{
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		fds[i] = -1;
	if (mkdir(dir, 0700) < 0)
		return snapshot_fail(err, errlen, "cannot create %s: %s%s", dir, strerror(errno),
				     errno == EEXIST ? " (the directory must not exist yet)" : "");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	for (int i = 0; dfd >= 0 && i < SNAPSHOT_NR_FILES; i++) {
		fds[i] = openat(dfd, snapshot_file_names[i], CREATE_FLAGS, 0600);
		if (fds[i] < 0)
			break;
	}
	int e = errno;
	if (dfd >= 0)
		close(dfd);
	if (dfd >= 0 && fds[SNAPSHOT_NR_FILES - 1] >= 0)
		return 0;
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	snapshot_remove_files(dir);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		fds[i] = -1;
	return snapshot_fail(err, errlen, "cannot create the files in %s: %s", dir, strerror(e));
}

void snapshot_remove_files(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		unlinkat(dfd, snapshot_file_names[i], 0);
	close(dfd);
	rmdir(dir);
}

int snapshot_check_files(const int fds[SNAPSHOT_NR_FILES], char *err, size_t errlen)
{
	struct stat sb[SNAPSHOT_NR_FILES];
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++) {
		const char *name = snapshot_file_names[i];
		int fl = fcntl(fds[i], F_GETFL);
		if (fl < 0 || fstat(fds[i], &sb[i]) < 0)
			return snapshot_fail(err, errlen, "snapshot: %s: not an open file", name);
		/* A pipe or a device could block the I/O thread; O_APPEND would ignore offsets. */
		if (!S_ISREG(sb[i].st_mode) || sb[i].st_size != 0)
			return snapshot_fail(err, errlen, "snapshot: %s: not an empty regular file",
					     name);
		if ((fl & O_ACCMODE) == O_RDONLY || (fl & O_APPEND))
			return snapshot_fail(
			    err, errlen, "snapshot: %s: not open for writing (or O_APPEND)", name);
		for (int j = 0; j < i; j++)
			if (sb[j].st_dev == sb[i].st_dev && sb[j].st_ino == sb[i].st_ino)
				return snapshot_fail(err, errlen,
						     "snapshot: %s and %s are the same file",
						     snapshot_file_names[j], name);
	}
	return 0;
}

/* A restored VM's untouched pages are the memory file's: if it has shrunk since, they are gone
 * (the end of the file reads as a hole, i.e. zeros), and no snapshot may say it saved them. */
static bool restored_from_shrunk_file(const struct guest_mem *mem)
{
	struct stat sb;
	return mem->file_fd >= 0 &&
	       (fstat(mem->file_fd, &sb) < 0 || (uint64_t)sb.st_size < mem->ram_size);
}

static int shrunk(char *err, size_t errlen)
{
	return snapshot_fail(err, errlen,
			     "snapshot: the memory file this VM was restored from is shorter than "
			     "its RAM now (truncated while the VM ran?): its pages are lost");
}

static int write_whole(int fd, const char *name, const void *buf, size_t len, char *err,
		       size_t errlen)
{
	if (write_all(fd, buf, len, 0) || fsync(fd))
		return snapshot_fail(err, errlen, "snapshot: %s: %s", name, strerror(errno));
	return 0;
}

int snapshot_write_files(const int fds[SNAPSHOT_NR_FILES], const struct snapshot_state *st,
			 const struct guest_mem *mem, char *err, size_t errlen)
{
	if (snapshot_check_files(fds, err, errlen))
		return -1;
	uint32_t mem_crc = 0;
	if (restored_from_shrunk_file(mem))
		return shrunk(err, errlen);
	if (write_memory(fds[SNAPSHOT_FILE_MEMORY], mem, &mem_crc))
		return snapshot_fail(err, errlen, "snapshot: %s: %s", SNAPSHOT_MEMORY,
				     strerror(errno));
	if (restored_from_shrunk_file(mem)) /* while it was read: what was read is not the RAM */
		return shrunk(err, errlen);
	size_t state_len;
	uint8_t *state = snapshot_state_write(st, &state_len);
	if (!state)
		return snapshot_fail(err, errlen, "out of memory");
	if (state_len >
	    SNAPSHOT_STATE_MAX) { /* balloon maps of a huge guest: no restore would read it */
		free(state);
		return snapshot_fail(err, errlen,
				     "snapshot: the state is %zu bytes, a restore reads at most %u",
				     state_len, SNAPSHOT_STATE_MAX);
	}
	uint32_t state_crc = crc32_update(0, state, state_len);
	int rc =
	    write_whole(fds[SNAPSHOT_FILE_STATE], SNAPSHOT_STATE, state, state_len, err, errlen);
	free(state);
	if (rc)
		return -1;
	struct json_writer w;
	json_writer_init(&w);
	json_begin_object(&w);
	json_member_string(&w, "format", SNAPSHOT_FORMAT_NAME);
	json_member_int(&w, "version", SNAPSHOT_VERSION);
	json_member_uint(&w, "state_bytes", state_len);
	json_member_uint(&w, "state_crc32", state_crc);
	json_member_uint(&w, "memory_bytes", mem->ram_size);
	json_member_uint(&w, "memory_crc32", mem_crc);
	json_end_object(&w);
	size_t hlen;
	char *header = json_writer_finish(&w, &hlen);
	if (!header)
		return snapshot_fail(err, errlen, "out of memory");
	header[hlen++] = '\n'; /* the writer leaves room for the NUL this replaces */
	rc = write_whole(fds[SNAPSHOT_FILE_HEADER], SNAPSHOT_HEADER, header, hlen, err, errlen);
	free(header);
	return rc;
}

/* The snapshot's directory and files: owned by the user who restores (or root) and writable by
 * no one else, so that nobody else decides what the VM is made of, before or while it runs (the
 * memory file stays mapped: a later write to it reaches the guest's untouched pages). */
static int check_owner(const struct stat *sb, const char *path, char *err, size_t errlen)
{
	uid_t me = geteuid();
	if (sb->st_uid != me && sb->st_uid != 0)
		return snapshot_fail(err, errlen,
				     "%s: owned by uid %u, not by you (uid %u) or root", path,
				     (unsigned)sb->st_uid, (unsigned)me);
	if (sb->st_mode & (S_IWGRP | S_IWOTH))
		return snapshot_fail(err, errlen,
				     "%s: writable by its group or others (mode %04o): refused "
				     "(chmod go-w)",
				     path, (unsigned)(sb->st_mode & 07777));
	return 0;
}

/* Open one of the snapshot's files in its directory (dfd): no symbolic link, a regular file,
 * owned as check_owner says. The path is for messages. */
static int open_in_dir(int dfd, const char *dir, const char *name, struct stat *sb, char *err,
		       size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return snapshot_fail(err, errlen, "%s: %s", path,
				     errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
	if (fstat(fd, sb) < 0 || !S_ISREG(sb->st_mode)) {
		close(fd);
		return snapshot_fail(err, errlen, "%s: not a regular file", path);
	}
	if (check_owner(sb, path, err, errlen)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read a whole regular file of at most max bytes from the snapshot's directory. */
static int read_file(int dfd, const char *dir, const char *name, size_t max, uint8_t **buf,
		     size_t *len, char *err, size_t errlen)
{
	struct stat sb;
	int fd = open_in_dir(dfd, dir, name, &sb, err, errlen);
	if (fd < 0)
		return -1;
	if ((uint64_t)sb.st_size > max) {
		close(fd);
		return snapshot_fail(err, errlen, "%s/%s: larger than %zu bytes", dir, name, max);
	}
	*buf = malloc((size_t)sb.st_size + 1);
	size_t got = 0;
	while (*buf && got < (size_t)sb.st_size) {
		ssize_t n = read(fd, *buf + got, (size_t)sb.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!*buf || got != (size_t)sb.st_size) {
		free(*buf);
		*buf = NULL;
		return snapshot_fail(err, errlen, "%s/%s: cannot read it", dir, name);
	}
	*len = got;
	return 0;
}

/* A non-negative integer member of the header. */
static int header_uint(const struct json_object *h, const char *key, uint64_t max, uint64_t *out,
		       char *err, size_t errlen)
{
	const struct json_member *m = json_get(h, key);
	if (!m || m->type != JSON_INT || m->num < 0 || (uint64_t)m->num > max)
		return snapshot_fail(err, errlen, "snapshot header: \"%s\" missing or out of range",
				     key);
	*out = (uint64_t)m->num;
	return 0;
}

struct header {
	uint64_t version, state_bytes, state_crc, memory_bytes, memory_crc;
};

static int read_header(int dfd, const char *dir, struct header *h, char *err, size_t errlen)
{
	if (faccessat(dfd, SNAPSHOT_HEADER, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return snapshot_fail(err, errlen, "%s is not a minivmm snapshot (no %s)", dir,
				     SNAPSHOT_HEADER);
	uint8_t *text;
	size_t len;
	if (read_file(dfd, dir, SNAPSHOT_HEADER, HEADER_MAX, &text, &len, err, errlen))
		return -1;
	if (!len) { /* written last: the snapshot was cut short */
		free(text);
		return snapshot_fail(err, errlen,
				     "%s is not a minivmm snapshot (%s is empty: cut short?)", dir,
				     SNAPSHOT_HEADER);
	}
	struct json_object o;
	char why[160];
	int rc = json_parse_object((const char *)text, len, &o, why, sizeof(why));
	free(text);
	if (rc)
		return snapshot_fail(err, errlen, "%s/%s: not a snapshot header: %s", dir,
				     SNAPSHOT_HEADER, why);
	const struct json_member *f = json_get(&o, "format");
	if (!f || f->type != JSON_STRING || strcmp(f->str, SNAPSHOT_FORMAT_NAME))
		return snapshot_fail(err, errlen,
				     "%s is not a minivmm snapshot (format is not \"%s\")", dir,
				     SNAPSHOT_FORMAT_NAME);
	if (header_uint(&o, "version", UINT32_MAX, &h->version, err, errlen))
		return -1;
	if (h->version != SNAPSHOT_VERSION)
		return snapshot_fail(err, errlen,
				     "%s: snapshot format version %" PRIu64
				     ", this minivmm reads version %d only",
				     dir, h->version, SNAPSHOT_VERSION);
	if (header_uint(&o, "state_bytes", SNAPSHOT_STATE_MAX, &h->state_bytes, err, errlen) ||
	    header_uint(&o, "state_crc32", UINT32_MAX, &h->state_crc, err, errlen) ||
	    header_uint(&o, "memory_bytes", INT64_MAX, &h->memory_bytes, err, errlen) ||
	    header_uint(&o, "memory_crc32", UINT32_MAX, &h->memory_crc, err, errlen))
		return -1;
	return 0;
}

/* Open the memory file and check its size and checksum against the header. */
static int open_memory(int dfd, const char *dir, const struct header *h, int *out, char *err,
		       size_t errlen)
{
	struct stat sb;
	int fd = open_in_dir(dfd, dir, SNAPSHOT_MEMORY, &sb, err, errlen);
	if (fd < 0)
		return -1;
	if ((uint64_t)sb.st_size != h->memory_bytes) {
		close(fd);
		return snapshot_fail(err, errlen,
				     "%s/%s: %lld bytes, expected %" PRIu64 " (truncated?)", dir,
				     SNAPSHOT_MEMORY, (long long)sb.st_size, h->memory_bytes);
	}
	uint32_t c;
	if (file_crc(fd, h->memory_bytes, &c) || c != h->memory_crc) {
		close(fd);
		return snapshot_fail(err, errlen, "%s/%s: checksum mismatch (the file is damaged)",
				     dir, SNAPSHOT_MEMORY);
	}
	*out = fd;
	return 0;
}

/* The snapshot's directory, as a descriptor its files are opened relative to (its path is
 * resolved once), owned as check_owner says. */
static int open_snapshot_dir(const char *dir, char *err, size_t errlen)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return snapshot_fail(err, errlen,
				     errno == ENOTDIR ? "%s is not a snapshot directory" : "%s: %s",
				     dir, strerror(errno));
	struct stat sb;
	int rc = fstat(dfd, &sb) < 0 ? snapshot_fail(err, errlen, "%s: %s", dir, strerror(errno))
				     : check_owner(&sb, dir, err, errlen);
	if (rc) {
		close(dfd);
		return -1;
	}
	return dfd;
}

static int open_dir_files(int dfd, const char *dir, struct snapshot_state **st, int *memory_fd,
			  char *err, size_t errlen)
{
	struct header h = {0};
	if (read_header(dfd, dir, &h, err, errlen))
		return -1;
	uint8_t *state;
	size_t len;
	if (read_file(dfd, dir, SNAPSHOT_STATE, SNAPSHOT_STATE_MAX, &state, &len, err, errlen))
		return -1;
	if (len != h.state_bytes || crc32_update(0, state, len) != h.state_crc) {
		free(state);
		return snapshot_fail(err, errlen,
				     "%s/%s: size or checksum mismatch (the file is damaged)", dir,
				     SNAPSHOT_STATE);
	}
	*st = malloc(sizeof(**st));
	char why[200] = "out of memory";
	if (!*st || snapshot_state_parse(state, len, *st, why, sizeof(why))) {
		free(state);
		snapshot_state_free(*st);
		*st = NULL;
		return snapshot_fail(err, errlen, "%s/%s: %s", dir, SNAPSHOT_STATE, why);
	}
	free(state);
	if ((*st)->config.memory_bytes != h.memory_bytes) {
		snapshot_state_free(*st);
		*st = NULL;
		return snapshot_fail(err, errlen, "%s/%s: memory size differs from the header", dir,
				     SNAPSHOT_STATE);
	}
	if (open_memory(dfd, dir, &h, memory_fd, err, errlen)) {
		snapshot_state_free(*st);
		*st = NULL;
		return -1;
	}
	return 0;
}

int snapshot_open_dir(const char *dir, struct snapshot_state **st, int *memory_fd, char *err,
		      size_t errlen)
{
	int dfd = open_snapshot_dir(dir, err, errlen);
	if (dfd < 0)
		return -1;
	int rc = open_dir_files(dfd, dir, st, memory_fd, err, errlen);
	close(dfd); /* no directory descriptor outlives the set-up */
	return rc;
}
