/* The x86 parts of a KVM VM: what KVM needs on Intel (TSS, identity map), the in-kernel
 * interrupt controllers and PIT, and where each virtio-mmio device sits (window and ISA IRQ). */
#ifndef MINIVMM_X86_MACHINE_H
#define MINIVMM_X86_MACHINE_H

#include <stdint.h>

/* Set up the VM's x86 platform on vm_fd: 0, or -1 (logged). */
int x86_machine_create(int vm_fd);
/* The index-th virtio-mmio device's window base and IRQ: 0, or -1 (logged) past the last. */
int x86_virtio_mmio_slot(int index, uint64_t *base, int *irq);

#endif
