/* A snapshot directory (README "Snapshots"): snapshot.json (format, version, sizes and
 * CRC-32s), state.bin (snapshot_format.h) and memory (guest RAM, byte for byte). Loading checks
 * everything before anything is restored. */
#ifndef MINIVMM_SNAPSHOT_FILES_H
#define MINIVMM_SNAPSHOT_FILES_H

#include <stddef.h>

#include "snapshot_format.h"
#include "vmm/base/guest_mem.h"

#define SNAPSHOT_FORMAT_NAME "minivmm-snapshot"
#define SNAPSHOT_VERSION     1
#define SNAPSHOT_HEADER	     "snapshot.json"
#define SNAPSHOT_STATE	     "state.bin"
#define SNAPSHOT_MEMORY	     "memory"

/* Create dir (it must not exist) and write the three files, the header last: a snapshot cut
 * short has none and is refused as "not a snapshot". Files are created, never overwritten.
 * Zero pages of memory are left as holes. Returns 0, or -1 with a one-line reason in err. */
int snapshot_write_dir(const char *dir, const struct snapshot_state *st,
		       const struct guest_mem *mem, char *err, size_t errlen);

/* Check and load dir: the header's format and version, the state's size and checksum and its
 * records, the memory file's size and checksum. On success *st is malloc'd and *memory_fd is
 * the memory file, open read-only. Returns 0, or -1 with a one-line reason in err. */
int snapshot_open_dir(const char *dir, struct snapshot_state **st, int *memory_fd, char *err,
		      size_t errlen);

#endif
