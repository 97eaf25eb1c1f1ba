#include "cmdline.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/layout.h"

int cmdline_write(struct guest_mem *mem, const char *cmdline, uint64_t max_len, char *err,
		  size_t errlen)
{
	if (max_len > CMDLINE_MAX - 1)
		max_len = CMDLINE_MAX - 1;
	/* strnlen: never walk further than one byte past what we could accept. */
	size_t len = strnlen(cmdline, (size_t)max_len + 1);
	if (len > max_len) {
		snprintf(err, errlen, "kernel command line too long (limit %" PRIu64 " bytes)",
			 max_len);
		return -1;
	}
	uint8_t *dst = guest_mem_ptr(mem, CMDLINE_ADDR, len + 1);
	if (!dst) {
		snprintf(err, errlen, "no guest RAM for the command line at 0x%llx", CMDLINE_ADDR);
		return -1;
	}
	memcpy(dst, cmdline, len + 1);
	return 0;
}
