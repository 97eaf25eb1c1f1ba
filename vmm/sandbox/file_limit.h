/* How large the sandboxed VMM may make a file (RLIMIT_FSIZE). The seccomp filters must allow
 * writes at any offset (a disk's pwrite64/pwritev and its io_uring writes, a snapshot's
 * ftruncate and pwrite64, the console file): a filter built ahead of time cannot know each
 * file's size. The limit is what keeps a compromised VMM from growing a host file, and so
 * filling the host's disk, past what the VMM itself needs. */
#ifndef MINIVMM_FILE_LIMIT_H
#define MINIVMM_FILE_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "vmm/cli/config.h"

/* No limit: a console file whose max-size is 0 asks for none. */
#define FILE_LIMIT_NONE UINT64_MAX

/* The limit for cfg, taken once every file is open (no thread opens one later): the largest of
 * guest RAM (a snapshot's memory file), a snapshot's state file at its largest, the console
 * file's max-size and the size of every regular file the process has open for writing now (its
 * disk images; stdout and stderr as large as they already are). */
uint64_t file_limit_for(const struct vm_config *cfg);

/* Set RLIMIT_FSIZE to bytes (FILE_LIMIT_NONE: leave it as it is), SIGXFSZ ignored so that a
 * write past it fails with EFBIG instead of killing the VMM. No filter allows setrlimit or
 * prlimit64, so it stays. Returns 0, or -1 with err set. */
int file_limit_apply(uint64_t bytes, char *err, size_t errlen);

#endif
