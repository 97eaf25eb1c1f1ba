#include "pc_devices.h"

#include "base/io_bus.h"
#include "base/log.h"

static void serial_tx(void *opaque, uint8_t byte)
{
	const struct x86_pc_devices *d = opaque;
	d->ops.serial_tx(d->ops.opaque, byte);
}

static void serial_irq(void *opaque, int level)
{
	const struct x86_pc_devices *d = opaque;
	d->ops.set_irq(d->ops.opaque, SERIAL_COM1_IRQ, level);
}

int x86_pc_devices_create(struct x86_pc_devices *d, struct io_bus *pio,
			  const struct x86_pc_ops *ops)
{
	d->ops = *ops;
	serial_init(&d->serial,
		    &(struct serial_ops){.tx = serial_tx, .set_irq = serial_irq, .opaque = d});
	d->exit_port = (struct debug_exit){.stop = ops->stop, .opaque = ops->opaque};
	d->i8042 = (struct i8042){.reset = ops->reset, .opaque = ops->opaque};
	d->sleep = (struct acpi_sleep){.power_off = ops->power_off, .opaque = ops->opaque};
	rtc_init(&d->rtc);
	if (io_bus_register(pio, SERIAL_COM1_BASE, 8, serial_io, &d->serial) ||
	    io_bus_register(pio, DEBUG_EXIT_PORT, 1, debug_exit_io, &d->exit_port) ||
	    io_bus_register(pio, I8042_DATA_PORT, 5, i8042_io, &d->i8042) ||
	    io_bus_register(pio, RTC_PORT, 2, rtc_io, &d->rtc) ||
	    io_bus_register(pio, ACPI_SLEEP_CONTROL_PORT, ACPI_SLEEP_PORTS, acpi_sleep_io,
			    &d->sleep)) {
		log_error("cannot register legacy devices");
		return -1;
	}
	return 0;
}

void x86_pc_devices_destroy(struct x86_pc_devices *d)
{
	serial_destroy(&d->serial);
}
