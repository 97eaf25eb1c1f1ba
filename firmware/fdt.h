/*
 * A minimal read-only flattened device tree parser (devicetree specification 0.4, chapter 5),
 * for the tree the loader may hand over. The blob is untrusted: every offset and length is
 * checked against it.
 */
#ifndef FDT_H
#define FDT_H

#include <stddef.h>
#include <stdint.h>

struct fdt_mmio_dev {
	uint64_t base, size;
	uint32_t irq; /* first cell of `interrupts` */
};

/*
 * Find the enabled nodes whose `compatible` lists "virtio,mmio" and have a `reg` and an
 * `interrupts`; store up to max of them in out, in tree order. Returns how many were found
 * (possibly more than max), or -1 when the blob is not a well-formed tree (*err says why).
 */
int fdt_virtio_mmio(const void *blob, size_t size, struct fdt_mmio_dev *out, unsigned max,
		    const char **err);

#endif
