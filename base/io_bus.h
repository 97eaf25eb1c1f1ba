/* Dispatch of guest port I/O and MMIO exits to the device that owns the address. */
#ifndef MINIVMM_IO_BUS_H
#define MINIVMM_IO_BUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* offset is relative to the range base; data holds len (1..8) bytes, little-endian. */
typedef void (*io_handler_fn)(void *opaque, uint64_t offset, uint8_t *data, uint32_t len,
			      bool is_write);

struct io_range {
	uint64_t base;
	uint64_t len;
	io_handler_fn handler;
	void *opaque;
};

#define IO_BUS_MAX_RANGES 64

struct io_bus {
	struct io_range ranges[IO_BUS_MAX_RANGES];
	int nr_ranges;
	pthread_rwlock_t lock;
};

void io_bus_init(struct io_bus *bus);
void io_bus_destroy(struct io_bus *bus);
/* Returns 0, or -1 if the range overlaps another, wraps, or the bus is full. */
int io_bus_register(struct io_bus *bus, uint64_t base, uint64_t len, io_handler_fn handler,
		    void *opaque);
/* Remove the range at base registered with opaque. Returns 0, or -1 if there is none. A handler
 * call already in flight may still complete after this returns: opaque must outlive the bus. */
int io_bus_unregister(struct io_bus *bus, uint64_t base, void *opaque);
/* Returns true if a device handled the access. Unclaimed reads return all ones. The handler runs
 * without the bus lock held, so it may itself register or unregister ranges (a PCI config write
 * that maps a BAR). */
bool io_bus_access(struct io_bus *bus, uint64_t addr, uint8_t *data, uint32_t len, bool is_write);

#endif
