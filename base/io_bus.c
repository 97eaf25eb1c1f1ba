#include "io_bus.h"

#include <string.h>

void io_bus_init(struct io_bus *bus)
{
	memset(bus, 0, sizeof(*bus));
	pthread_rwlock_init(&bus->lock, NULL);
}

void io_bus_destroy(struct io_bus *bus)
{
	pthread_rwlock_destroy(&bus->lock);
}

int io_bus_register(struct io_bus *bus, uint64_t base, uint64_t len, io_handler_fn handler,
		    void *opaque)
{
	if (len == 0 || base + len < base)
		return -1;
	pthread_rwlock_wrlock(&bus->lock);
	int rc = -1;
	if (bus->nr_ranges == IO_BUS_MAX_RANGES)
		goto out;
	for (int i = 0; i < bus->nr_ranges; i++) {
		const struct io_range *r = &bus->ranges[i];
		if (base < r->base + r->len && r->base < base + len)
			goto out;
	}
	bus->ranges[bus->nr_ranges++] =
	    (struct io_range){.base = base, .len = len, .handler = handler, .opaque = opaque};
	rc = 0;
out:
	pthread_rwlock_unlock(&bus->lock);
	return rc;
}

int io_bus_unregister(struct io_bus *bus, uint64_t base, void *opaque)
{
	int rc = -1;
	pthread_rwlock_wrlock(&bus->lock);
	for (int i = 0; i < bus->nr_ranges; i++) {
		if (bus->ranges[i].base == base && bus->ranges[i].opaque == opaque) {
			bus->ranges[i] = bus->ranges[--bus->nr_ranges];
			rc = 0;
			break;
		}
	}
	pthread_rwlock_unlock(&bus->lock);
	return rc;
}

bool io_bus_access(struct io_bus *bus, uint64_t addr, uint8_t *data, uint32_t len, bool is_write)
{
	bool handled = false;
	struct io_range r;
	pthread_rwlock_rdlock(&bus->lock);
	for (int i = 0; i < bus->nr_ranges; i++) {
		if (addr >= bus->ranges[i].base &&
		    addr - bus->ranges[i].base < bus->ranges[i].len) {
			r = bus->ranges[i];
			handled = true;
			break;
		}
	}
	pthread_rwlock_unlock(&bus->lock);
	if (!handled) {
		if (!is_write)
			memset(data, 0xff, len);
		return false;
	}
	/* An access straddling the end of a range is the guest's bug: clip it. */
	uint64_t room = r.len - (addr - r.base);
	uint32_t n = len <= room ? len : (uint32_t)room;
	if (!is_write && n < len)
		memset(data + n, 0xff, len - n);
	r.handler(r.opaque, addr - r.base, data, n, is_write);
	return true;
}
