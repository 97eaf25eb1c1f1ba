#include "dsdt.h"

#include <stdio.h>

#include "arch/x86/layout.h"
#include "devices/acpi_sleep.h"
#include "devices/pci.h"
#include "devices/rtc.h"
#include "devices/serial.h"

#define PCI_IO_HOLE_START 0x0cf8 /* the configuration ports, decoded by the bridge itself */
#define PCI_IO_HOLE_END	  0x0cff

static void pci0_crs(struct aml *a)
{
	uint8_t buf[128];
	struct aml r;
	aml_init(&r, buf, sizeof(buf));
	aml_res_word_bus(&r, 0, 0);
	aml_res_io(&r, PCI_IO_HOLE_START, PCI_IO_HOLE_START, 1,
		   PCI_IO_HOLE_END - PCI_IO_HOLE_START + 1);
	aml_res_word_io(&r, 0x0000, PCI_IO_HOLE_START - 1);
	aml_res_word_io(&r, 0x0d00, 0xffff);
	aml_res_dword_mem(&r, (uint32_t)PCI_MMIO_BASE, (uint32_t)PCI_HOLE_LIMIT);
	aml_res_end(&r);
	a->error |= r.error;
	aml_name(a, "_CRS");
	aml_buffer(a, buf, r.len);
}

/* Every slot's INTA#-INTD# to the IOAPIC GSI pci_intx_gsi() names (level, active low). */
static void pci0_prt(struct aml *a)
{
	aml_name(a, "_PRT");
	size_t prt = aml_package_begin(a, (uint8_t)((PCI_NR_SLOTS - 1) * 4));
	for (int slot = 1; slot < PCI_NR_SLOTS; slot++) {
		for (int pin = 1; pin <= 4; pin++) {
			size_t e = aml_package_begin(a, 4);
			aml_integer(a, (uint64_t)slot << 16 | 0xffff); /* any function */
			aml_integer(a, (uint64_t)(pin - 1));
			aml_integer(a, 0); /* no link device: the last field is a GSI */
			aml_integer(a, (uint64_t)pci_intx_gsi(slot, pin));
			aml_pkg_end(a, e);
		}
	}
	aml_pkg_end(a, prt);
}

static void ecam_reservation(struct aml *a)
{
	size_t dev = aml_device_begin(a, "RES0");
	aml_name(a, "_HID");
	aml_integer(a, aml_eisaid("PNP0C02"));
	aml_name(a, "_UID");
	aml_integer(a, 0);
	uint8_t buf[32];
	struct aml r;
	aml_init(&r, buf, sizeof(buf));
	aml_res_mem32_fixed(&r, (uint32_t)PCI_ECAM_BASE, (uint32_t)PCI_ECAM_SIZE);
	aml_res_end(&r);
	a->error |= r.error;
	aml_name(a, "_CRS");
	aml_buffer(a, buf, r.len);
	aml_pkg_end(a, dev);
}

/* _CRS from a resource template built by fill (which must end it with aml_res_end). */
static void crs(struct aml *a, void (*fill)(struct aml *r, const void *arg), const void *arg)
{
	uint8_t buf[64];
	struct aml r;
	aml_init(&r, buf, sizeof(buf));
	fill(&r, arg);
	a->error |= r.error;
	aml_name(a, "_CRS");
	aml_buffer(a, buf, r.len);
}

struct legacy_device {
	const char *name, *hid;
	uint16_t port;
	uint8_t ports;
	unsigned irq;
};

static void legacy_resources(struct aml *r, const void *arg)
{
	const struct legacy_device *d = arg;
	aml_res_io(r, d->port, d->port, 1, d->ports);
	aml_res_irq(r, d->irq);
	aml_res_end(r);
}

static void legacy_device(struct aml *a, const struct legacy_device *d)
{
	size_t dev = aml_device_begin(a, d->name);
	aml_name(a, "_HID");
	aml_integer(a, aml_eisaid(d->hid));
	aml_name(a, "_UID");
	aml_integer(a, 0);
	crs(a, legacy_resources, d);
	aml_pkg_end(a, dev);
}

static void mmio_resources(struct aml *r, const void *arg)
{
	const struct dsdt_mmio_device *d = arg;
	if (d->base + d->size > (1ULL << 32) || d->size > UINT32_MAX || d->size == 0)
		r->error = true;
	aml_res_mem32_fixed(r, (uint32_t)d->base, (uint32_t)d->size);
	aml_res_interrupt_edge(r, d->gsi);
	aml_res_end(r);
}

/* Linux's virtio_mmio driver matches _HID "LNRO0005", as on QEMU's microvm. */
static void virtio_mmio_device(struct aml *a, int index, const struct dsdt_mmio_device *d)
{
	char name[16];
	snprintf(name, sizeof(name), "VR%02d", index % 100);
	size_t dev = aml_device_begin(a, name);
	aml_name(a, "_HID");
	aml_string(a, "LNRO0005");
	aml_name(a, "_UID");
	aml_integer(a, (uint64_t)index);
	crs(a, mmio_resources, d);
	aml_pkg_end(a, dev);
}

/* \_S5: soft-off with SLP_TYP ACPI_S5_SLEEP_TYPE (devices/acpi_sleep.c ends the VM on it). */
static void sleep_state_s5(struct aml *a)
{
	aml_name(a, "\\_S5");
	size_t pkg = aml_package_begin(a, 1);
	aml_integer(a, ACPI_S5_SLEEP_TYPE);
	aml_pkg_end(a, pkg);
}

void dsdt_build(struct aml *a, const struct dsdt_config *cfg)
{
	static const struct legacy_device com1 = {"COM1", "PNP0501", SERIAL_COM1_BASE, 8,
						  SERIAL_COM1_IRQ};
	static const struct legacy_device rtc = {"RTC", "PNP0B00", RTC_PORT, 2, RTC_IRQ};
	sleep_state_s5(a);
	size_t sb = aml_scope_begin(a, "\\_SB");
	size_t dev = aml_device_begin(a, "PCI0");
	aml_name(a, "_HID");
	aml_integer(a, aml_eisaid("PNP0A08"));
	aml_name(a, "_CID");
	aml_integer(a, aml_eisaid("PNP0A03"));
	aml_name(a, "_SEG");
	aml_integer(a, 0);
	aml_name(a, "_BBN");
	aml_integer(a, 0);
	aml_name(a, "_UID");
	aml_integer(a, 0);
	pci0_crs(a);
	pci0_prt(a);
	aml_pkg_end(a, dev);
	ecam_reservation(a);
	legacy_device(a, &com1);
	legacy_device(a, &rtc);
	int n = cfg ? cfg->nr_virtio_mmio : 0;
	if (n < 0 || n > DSDT_MAX_MMIO_DEVICES)
		a->error = true;
	for (int i = 0; !a->error && i < n; i++)
		virtio_mmio_device(a, i, &cfg->virtio_mmio[i]);
	aml_pkg_end(a, sb);
}
