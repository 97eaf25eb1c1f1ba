/* Just enough of the PS/2 controller for a guest to reset the machine (command 0xfe). */
#ifndef MINIVMM_I8042_H
#define MINIVMM_I8042_H

#include <stdbool.h>
#include <stdint.h>

#define I8042_DATA_PORT	   0x60
#define I8042_COMMAND_PORT 0x64
#define I8042_CMD_RESET	   0xfe /* pulse the reset line */

struct i8042 {
	void (*reset)(void *opaque);
	void *opaque;
};

/* Registered over ports 0x60..0x64; offset 0 is data, offset 4 status/command. */
void i8042_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

#endif
