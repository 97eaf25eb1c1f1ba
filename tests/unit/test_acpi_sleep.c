/* The ACPI sleep control register: SLP_EN with \_S5's sleep type powers off, nothing else does. */
#include <criterion/criterion.h>

#include "devices/acpi_sleep.h"
#include "base/log.h"

static int power_offs;

static void power_off(void *opaque)
{
	(void)opaque;
	power_offs++;
}

static struct acpi_sleep dev;

static void setup(void)
{
	power_offs = 0;
	dev = (struct acpi_sleep){.power_off = power_off};
	log_set_quiet(true);
}

TestSuite(acpi_sleep, .init = setup);

static void wr(uint64_t offset, uint8_t v)
{
	acpi_sleep_io(&dev, offset, &v, 1, true);
}

Test(acpi_sleep, s5_with_slp_en_powers_off)
{
	wr(0, 5 << 2 | 1 << 5); /* what Linux's acpi_hw_extended_sleep writes for \_S5 = 5 */
	cr_assert_eq(power_offs, 1);
}

Test(acpi_sleep, other_writes_do_nothing)
{
	wr(0, 5 << 2);		/* the type without SLP_EN */
	wr(0, 3 << 2 | 1 << 5); /* S3: not offered */
	wr(1, 5 << 2 | 1 << 5); /* the status register */
	uint8_t two[2] = {5 << 2 | 1 << 5, 0};
	acpi_sleep_io(&dev, 0, two, 2, true); /* not a byte access */
	cr_assert_eq(power_offs, 0);
	cr_assert(dev.warned, "the S3 request was logged");
}

Test(acpi_sleep, reads_show_no_wake_status)
{
	uint8_t v[2] = {0xff, 0xff};
	acpi_sleep_io(&dev, 0, v, 2, false);
	cr_assert(v[0] == 0 && v[1] == 0);
}
