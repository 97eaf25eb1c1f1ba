/* The legacy PC devices on the port I/O bus: each at its port, each reaching the VMM only through
 * struct x86_pc_ops (with its opaque), COM1's interrupt on its ISA IRQ. */
#include <criterion/criterion.h>

#include "arch/x86/pc_devices.h"
#include "base/io_bus.h"
#include "base/log.h"

struct calls {
	uint8_t tx[8];
	int nr_tx;
	int irq_gsi, irq_level, irq_changes;
	int stops, stop_status;
	int resets, power_offs;
};

static struct calls calls;
static struct io_bus pio;
static struct x86_pc_devices pc;

static void serial_tx(void *opaque, uint8_t byte)
{
	struct calls *c = opaque;
	if (c->nr_tx < (int)sizeof(c->tx))
		c->tx[c->nr_tx++] = byte;
}

static void set_irq(void *opaque, int gsi, int level)
{
	struct calls *c = opaque;
	c->irq_gsi = gsi;
	c->irq_level = level;
	c->irq_changes++;
}

static void stop(void *opaque, int status)
{
	struct calls *c = opaque;
	c->stops++;
	c->stop_status = status;
}

static void reset(void *opaque)
{
	((struct calls *)opaque)->resets++;
}

static void power_off(void *opaque)
{
	((struct calls *)opaque)->power_offs++;
}

static const struct x86_pc_ops ops = {.serial_tx = serial_tx,
				      .set_irq = set_irq,
				      .stop = stop,
				      .reset = reset,
				      .power_off = power_off,
				      .opaque = &calls};

static void setup(void)
{
	log_set_quiet(true);
	calls = (struct calls){.irq_gsi = -1};
	io_bus_init(&pio);
	cr_assert_eq(x86_pc_devices_create(&pc, &pio, &ops), 0);
}

static void teardown(void)
{
	x86_pc_devices_destroy(&pc);
	io_bus_destroy(&pio);
}

TestSuite(pc_devices, .init = setup, .fini = teardown);

static void out(uint64_t port, uint8_t v)
{
	cr_assert(io_bus_access(&pio, port, &v, 1, true), "port 0x%llx unclaimed",
		  (unsigned long long)port);
}

static uint8_t in(uint64_t port)
{
	uint8_t v = 0;
	cr_assert(io_bus_access(&pio, port, &v, 1, false), "port 0x%llx unclaimed",
		  (unsigned long long)port);
	return v;
}

Test(pc_devices, com1_transmits_and_interrupts_on_irq4)
{
	out(0x3f8, 'h');
	out(0x3f8, 'i');
	cr_assert_eq(calls.nr_tx, 2);
	cr_assert(calls.tx[0] == 'h' && calls.tx[1] == 'i');
	out(0x3f9, 0x02); /* IER: THRI, with the transmitter empty */
	cr_assert_eq(calls.irq_changes, 1);
	cr_assert_eq(calls.irq_gsi, 4);
	cr_assert_eq(calls.irq_level, 1);
	cr_assert_eq(in(0x3fa) & 0x0f, 0x02, "IIR: THRI");
	cr_assert_eq(calls.irq_level, 0, "reading IIR lowers it");
	cr_assert_eq(calls.stops + calls.resets + calls.power_offs, 0);
}

Test(pc_devices, exit_port_stops_with_the_value_written)
{
	out(0xf4, 7);
	cr_assert_eq(calls.stops, 1);
	cr_assert_eq(calls.stop_status, 7);
}

Test(pc_devices, i8042_reset_command_resets)
{
	out(0x64, 0xfe);
	cr_assert_eq(calls.resets, 1);
	cr_assert_eq(calls.stops + calls.power_offs, 0);
}

Test(pc_devices, acpi_s5_powers_off)
{
	out(0x600, 5 << 2 | 1 << 5); /* SLP_TYP = \_S5, SLP_EN */
	cr_assert_eq(calls.power_offs, 1);
	cr_assert_eq(calls.stops + calls.resets, 0);
}

Test(pc_devices, rtc_answers_at_0x70)
{
	out(0x70, 0x0d); /* register D: valid RAM and time */
	cr_assert_eq(in(0x71) & 0x80, 0x80);
}

Test(pc_devices, ports_are_taken_once)
{
	struct x86_pc_devices again;
	cr_assert_eq(x86_pc_devices_create(&again, &pio, &ops), -1, "COM1's ports are taken");
	x86_pc_devices_destroy(&again);
}
