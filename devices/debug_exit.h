/* Exit port: a guest write of value v to port 0xf4 ends the VMM with status v. */
#ifndef MINIVMM_DEBUG_EXIT_H
#define MINIVMM_DEBUG_EXIT_H

#include <stdbool.h>
#include <stdint.h>

#define DEBUG_EXIT_PORT 0xf4

struct debug_exit {
	void (*stop)(void *opaque, int status);
	void *opaque;
};

void debug_exit_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

#endif
