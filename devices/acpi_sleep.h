/* The sleep control and status registers of a hardware-reduced ACPI platform (ACPI 6.5, 4.8.3.7):
 * how a guest powers the machine off. The FADT points SLEEP_CONTROL_REG and SLEEP_STATUS_REG
 * here and the DSDT's \_S5 names the sleep type; writing that type with SLP_EN set ends the VM. */
#ifndef MINIVMM_ACPI_SLEEP_H
#define MINIVMM_ACPI_SLEEP_H

#include <stdbool.h>
#include <stdint.h>

#define ACPI_SLEEP_CONTROL_PORT 0x600 /* byte: SLP_TYPx in bits 2-4, SLP_EN in bit 5 */
#define ACPI_SLEEP_STATUS_PORT	0x601 /* byte: WAK_STS in bit 7 (never set: no wake-up) */
#define ACPI_SLEEP_PORTS	2
#define ACPI_S5_SLEEP_TYPE	5 /* the value \_S5 gives; only soft-off is offered */

struct acpi_sleep {
	void (*power_off)(void *opaque);
	void *opaque;
	bool warned; /* an unsupported sleep request was logged once */
};

/* Registered over ACPI_SLEEP_CONTROL_PORT, ACPI_SLEEP_PORTS bytes. */
void acpi_sleep_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

#endif
