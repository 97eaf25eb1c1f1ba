/* I/O APIC redirection entries (IOREGSEL/IOWIN at 0xfec00000). */
#ifndef IOAPIC_H
#define IOAPIC_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Route GSI `gsi` to `vector` on APIC `dest`: fixed delivery, physical destination,
 * unmasked; edge/active-high (ISA) or level/active-low. GSIs past the first IOAPIC's
 * pins go to a second one at 0xfec10000 (QEMU microvm's ioapic2). False: no such pin.
 */
bool ioapic_route(uint32_t gsi, uint8_t vector, uint8_t dest, bool level);
void ioapic_mask(uint32_t gsi);

#endif
