/* Writing the kernel command line to CMDLINE_ADDR. */
#ifndef MINIVMM_X86_CMDLINE_H
#define MINIVMM_X86_CMDLINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

/* Copy cmdline and its NUL to CMDLINE_ADDR. max_len is the longest the kernel accepts (without
 * the NUL); CMDLINE_MAX - 1 applies regardless. Returns 0 or -1 with err. */
int cmdline_write(struct guest_mem *mem, const char *cmdline, uint64_t max_len, char *err,
		  size_t errlen);

#endif
