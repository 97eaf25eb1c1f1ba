/* Reading whole input files (kernel, initrd) with size limits and clear errors; writing whole
 * output files (--dump-dtb). */
#ifndef MINIVMM_FILE_UTIL_H
#define MINIVMM_FILE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Read path into a malloc'd buffer. Fails (logged, naming what) on a missing, unreadable,
 * non-regular (a FIFO too, without waiting for a writer) or larger-than-max_size file. */
int read_whole_file(const char *path, const char *what, size_t max_size, uint8_t **buf,
		    size_t *size);
/* Create or truncate path (mode 0644; a regular file, nothing else) and write buf to it.
 * Returns 0 or -1 (logged, naming what). */
int write_whole_file(const char *path, const char *what, const uint8_t *buf, size_t size);

#endif
