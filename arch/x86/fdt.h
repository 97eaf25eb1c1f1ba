/* The machine described as a flattened device tree (libfdt): memory, CPUs, the IOAPIC, the
 * serial port, every virtio-mmio device with its interrupt, and the PCI host bridge.
 * --dump-dtb writes it; --dtb also hands it to the guest (setup_data SETUP_DTB). */
#ifndef MINIVMM_X86_FDT_H
#define MINIVMM_X86_FDT_H

#include <stddef.h>
#include <stdint.h>

struct guest_mem;
struct dsdt_config;

/* Build the tree of a machine with mem's RAM regions, nr_cpus CPUs and the virtio-mmio windows
 * in devices (the list the DSDT describes; NULL: none) into a malloc'd buffer. Returns 0 or -1
 * (logged). */
int x86_fdt_build(const struct guest_mem *mem, int nr_cpus, const struct dsdt_config *devices,
		  uint8_t **blob, size_t *size);

#endif
