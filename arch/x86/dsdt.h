/* The DSDT's AML: the PCI host bridge (\_SB.PCI0, PNP0A08) with its resources and legacy
 * interrupt routing (_PRT), a motherboard resource (PNP0C02) reserving the ECAM window, the
 * legacy devices with their ports and ISA IRQs (COM1 PNP0501, CMOS RTC PNP0B00), every
 * virtio-mmio device (LNRO0005: window and interrupt) and the soft-off sleep state \_S5.
 *
 * With a hardware-reduced FADT Linux sets up no legacy PIC and reserves no ISA IRQs, so a device
 * the DSDT does not describe gets no interrupt: COM1 would only be polled (no userspace console
 * output, no input) and rtc_cmos would fail to probe. Distribution kernels also find
 * virtio-mmio devices only here (they lack CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES). */
#ifndef MINIVMM_X86_DSDT_H
#define MINIVMM_X86_DSDT_H

#include <stdint.h>

#include "arch/x86/aml.h"

#define DSDT_MAX_MMIO_DEVICES 16

struct dsdt_mmio_device {
	uint64_t base, size; /* must lie below 4 GiB */
	uint32_t gsi;	     /* edge-triggered, active high */
};

/* What the machine has beyond its fixed devices; NULL in dsdt_build means nothing more. */
struct dsdt_config {
	const struct dsdt_mmio_device *virtio_mmio;
	int nr_virtio_mmio; /* 0..DSDT_MAX_MMIO_DEVICES */
};

/* Append the definition blocks' AML (not the table header). Check a->error afterwards. */
void dsdt_build(struct aml *a, const struct dsdt_config *cfg);

#endif
