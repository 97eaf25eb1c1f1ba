/* The legacy PC devices every x86 VM has, on the port I/O bus: COM1 (16550A UART), the exit
 * port, the i8042 (guest reset), the CMOS RTC and the ACPI sleep registers (soft-off). What they
 * do to the machine goes through struct x86_pc_ops: this layer knows no VM. */
#ifndef MINIVMM_X86_PC_DEVICES_H
#define MINIVMM_X86_PC_DEVICES_H

#include <stdint.h>

#include "devices/acpi_sleep.h"
#include "devices/debug_exit.h"
#include "devices/i8042.h"
#include "devices/rtc.h"
#include "devices/serial.h"

struct io_bus;

/* Callbacks into the VMM, each passed opaque. Called from vCPU threads (port I/O exits). */
struct x86_pc_ops {
	void (*serial_tx)(void *opaque, uint8_t byte);	   /* COM1 transmitted a byte */
	void (*set_irq)(void *opaque, int gsi, int level); /* drive an interrupt line */
	void (*stop)(void *opaque, int status);		   /* the exit port was written */
	void (*reset)(void *opaque);			   /* the i8042 pulsed the reset line */
	void (*power_off)(void *opaque);		   /* the guest entered ACPI S5 */
	void *opaque;
};

struct x86_pc_devices {
	struct x86_pc_ops ops;
	struct serial serial;
	struct debug_exit exit_port;
	struct i8042 i8042;
	struct rtc rtc;
	struct acpi_sleep sleep;
};

/* Set up the devices in d (which must outlive pio) and register their ports on pio. Returns 0,
 * or -1 (logged). */
int x86_pc_devices_create(struct x86_pc_devices *d, struct io_bus *pio,
			  const struct x86_pc_ops *ops);
/* Release what the devices hold (after the vCPUs stopped). */
void x86_pc_devices_destroy(struct x86_pc_devices *d);

#endif
