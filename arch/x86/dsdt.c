#include "dsdt.h"

#include "arch/x86/layout.h"
#include "devices/pci.h"

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

void dsdt_build(struct aml *a)
{
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
	aml_pkg_end(a, sb);
}
