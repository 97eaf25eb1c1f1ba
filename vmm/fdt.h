/* The machine described as a flattened device tree (libfdt): memory, CPUs, the serial port,
 * every virtio-mmio device with its interrupt, and the PCI host bridge. --dump-dtb writes it;
 * --dtb also hands it to the guest (setup_data SETUP_DTB). */
#ifndef MINIVMM_FDT_H
#define MINIVMM_FDT_H

#include <stddef.h>
#include <stdint.h>

struct vm;
struct virtio_devices;

/* Build the tree into a malloc'd buffer. Returns 0 or -1 (logged). */
int fdt_build_machine(const struct vm *vm, const struct virtio_devices *devs, uint8_t **blob,
		      size_t *size);
/* Write blob to path. Returns 0 or -1 (logged). */
int fdt_write_file(const char *path, const uint8_t *blob, size_t size);

#endif
