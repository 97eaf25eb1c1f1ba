/* A snapshot directory (docs/snapshots.md): snapshot.json (format, version, sizes and
 * CRC-32s), state.bin (snapshot_format.h) and memory (guest RAM, byte for byte). Loading checks
 * everything before anything is restored. */
#ifndef MINIVMM_SNAPSHOT_FILES_H
#define MINIVMM_SNAPSHOT_FILES_H

#include <stddef.h>

#include "snapshot_format.h"
#include "base/guest_mem.h"

#define SNAPSHOT_FORMAT_NAME "minivmm-snapshot"
#define SNAPSHOT_VERSION     2
#define SNAPSHOT_HEADER	     "snapshot.json"
#define SNAPSHOT_STATE	     "state.bin"
#define SNAPSHOT_MEMORY	     "memory"
/* The largest state file a snapshot writes and a restore reads. */
#define SNAPSHOT_STATE_MAX (64u << 20)

enum { SNAPSHOT_FILE_MEMORY, SNAPSHOT_FILE_STATE, SNAPSHOT_FILE_HEADER, SNAPSHOT_NR_FILES };
extern const char *const snapshot_file_names[SNAPSHOT_NR_FILES];

/* A snapshot is written into files its requester made: the VMM's sandbox creates no file and no
 * directory (seccomp_rules.c). snapshot_create_files makes dir (it must not exist) and its three
 * files, empty and open for writing, in snapshot_file_names' order: `minivmm ctl snapshot` does
 * this and passes them over the control socket. Returns 0, or -1 with a one-line reason in err
 * (nothing is left behind). */
int snapshot_create_files(const char *dir, int fds[SNAPSHOT_NR_FILES], char *err, size_t errlen);

/* Remove what snapshot_create_files made (after a snapshot that failed). */
void snapshot_remove_files(const char *dir);

/* Check descriptors from a client before the VM is paused: each a regular file, empty, open
 * for writing without O_APPEND, no two the same file. Returns 0, or -1 with a reason in err. */
int snapshot_check_files(const int fds[SNAPSHOT_NR_FILES], char *err, size_t errlen);

/* Write the snapshot into checked files, the header last: a snapshot cut short has an empty
 * header and is refused as "not a snapshot". Zero pages of memory are left as holes. Returns 0,
 * or -1 with a one-line reason in err. */
int snapshot_write_files(const int fds[SNAPSHOT_NR_FILES], const struct snapshot_state *st,
			 const struct guest_mem *mem, char *err, size_t errlen);

/* Check and load dir: the header's format and version, the state's size and checksum and its
 * records, the memory file's size and checksum. On success *st is malloc'd and *memory_fd is
 * the memory file, open read-only. Returns 0, or -1 with a one-line reason in err. */
int snapshot_open_dir(const char *dir, struct snapshot_state **st, int *memory_fd, char *err,
		      size_t errlen);

#endif
