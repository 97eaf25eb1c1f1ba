#include "debug_exit.h"

#include <string.h>

void debug_exit_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct debug_exit *d = opaque;
	(void)offset;
	if (!is_write) {
		memset(data, 0xff, len);
		return;
	}
	/* Only the low byte counts, whatever the access width: exit statuses are 8 bits. */
	d->stop(d->opaque, data[0]);
}
