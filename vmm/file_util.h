/* Reading whole input files (kernel, initrd) with size limits and clear errors. */
#ifndef MINIVMM_FILE_UTIL_H
#define MINIVMM_FILE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Read path into a malloc'd buffer. Fails (logged, naming what) on a missing, unreadable,
 * non-regular or larger-than-max_size file. */
int read_whole_file(const char *path, const char *what, size_t max_size, uint8_t **buf,
		    size_t *size);

#endif
