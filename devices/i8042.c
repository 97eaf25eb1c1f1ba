#include "i8042.h"

#include <string.h>

void i8042_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct i8042 *k = opaque;
	if (!is_write) {
		/* No keyboard: status says both buffers empty, data reads 0. */
		memset(data, 0, len);
		return;
	}
	if (offset == I8042_COMMAND_PORT - I8042_DATA_PORT && data[0] == I8042_CMD_RESET)
		k->reset(k->opaque);
}
