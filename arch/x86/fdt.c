#include "fdt.h"

#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>

#include "arch/x86/dsdt.h"
#include "arch/x86/layout.h"
#include "devices/serial.h"
#include "base/guest_mem.h"
#include "base/log.h"

#define FDT_MAX_SIZE   (64 * 1024)
#define PHANDLE_IOAPIC 1

/* Interrupt specifier for the IOAPIC: pin, then flags (0: edge, active high, as ISA). */
#define IRQ_TYPE_EDGE_RISING 1

static int prop_u64_pair(void *fdt, const char *name, uint64_t a, uint64_t b)
{
	fdt64_t cells[2] = {cpu_to_fdt64(a), cpu_to_fdt64(b)};
	return fdt_property(fdt, name, cells, sizeof(cells));
}

static int add_memory(void *fdt, const struct guest_mem *mem)
{
	int rc = 0;
	for (int i = 0; i < mem->nr_regions && !rc; i++) {
		const struct mem_region *r = &mem->regions[i];
		char name[40];
		snprintf(name, sizeof(name), "memory@%llx", (unsigned long long)r->gpa);
		rc = fdt_begin_node(fdt, name);
		rc = rc ?: fdt_property_string(fdt, "device_type", "memory");
		rc = rc ?: prop_u64_pair(fdt, "reg", r->gpa, r->size);
		rc = rc ?: fdt_end_node(fdt);
	}
	return rc;
}

static int add_cpus(void *fdt, int nr_cpus)
{
	int rc = fdt_begin_node(fdt, "cpus");
	rc = rc ?: fdt_property_u32(fdt, "#address-cells", 1);
	rc = rc ?: fdt_property_u32(fdt, "#size-cells", 0);
	for (int i = 0; i < nr_cpus && !rc; i++) {
		char name[24];
		snprintf(name, sizeof(name), "cpu@%d", i);
		rc = fdt_begin_node(fdt, name);
		rc = rc ?: fdt_property_string(fdt, "device_type", "cpu");
		rc = rc ?: fdt_property_string(fdt, "compatible", "intel,x86-64");
		rc = rc ?: fdt_property_u32(fdt, "reg", (uint32_t)i); /* the APIC id */
		rc = rc ?: fdt_end_node(fdt);
	}
	return rc ?: fdt_end_node(fdt);
}

static int add_ioapic(void *fdt)
{
	char name[40];
	snprintf(name, sizeof(name), "ioapic@%llx", (unsigned long long)IOAPIC_ADDR);
	int rc = fdt_begin_node(fdt, name);
	rc = rc ?: fdt_property_string(fdt, "compatible", "intel,ce4100-ioapic");
	rc = rc ?: prop_u64_pair(fdt, "reg", IOAPIC_ADDR, 0x1000);
	rc = rc ?: fdt_property(fdt, "interrupt-controller", NULL, 0);
	rc = rc ?: fdt_property_u32(fdt, "#address-cells", 0);
	rc = rc ?: fdt_property_u32(fdt, "#interrupt-cells", 2);
	rc = rc ?: fdt_property_u32(fdt, "phandle", PHANDLE_IOAPIC);
	return rc ?: fdt_end_node(fdt);
}

static int prop_irq(void *fdt, int irq)
{
	fdt32_t cells[2] = {cpu_to_fdt32((uint32_t)irq), cpu_to_fdt32(IRQ_TYPE_EDGE_RISING)};
	return fdt_property(fdt, "interrupts", cells, sizeof(cells));
}

static int add_serial(void *fdt)
{
	char name[32];
	snprintf(name, sizeof(name), "serial@%x", SERIAL_COM1_BASE);
	int rc = fdt_begin_node(fdt, name);
	rc = rc ?: fdt_property_string(fdt, "compatible", "ns16550a");
	/* Port I/O: reg is in the I/O space of the isa bus convention, flagged by the name. */
	rc = rc ?: prop_u64_pair(fdt, "reg", SERIAL_COM1_BASE, 8);
	rc = rc ?: fdt_property_u32(fdt, "clock-frequency", 1843200);
	rc = rc ?: prop_irq(fdt, SERIAL_COM1_IRQ);
	return rc ?: fdt_end_node(fdt);
}

static int add_virtio_mmio(void *fdt, const struct dsdt_config *devices)
{
	int rc = 0;
	for (int i = 0; devices && i < devices->nr_virtio_mmio && !rc; i++) {
		const struct dsdt_mmio_device *d = &devices->virtio_mmio[i];
		char name[40];
		snprintf(name, sizeof(name), "virtio_mmio@%llx", (unsigned long long)d->base);
		rc = fdt_begin_node(fdt, name);
		rc = rc ?: fdt_property_string(fdt, "compatible", "virtio,mmio");
		rc = rc ?: prop_u64_pair(fdt, "reg", d->base, d->size);
		rc = rc ?: prop_irq(fdt, (int)d->gsi);
		rc = rc ?: fdt_property(fdt, "dma-coherent", NULL, 0);
		rc = rc ?: fdt_end_node(fdt);
	}
	return rc;
}

static int add_pci(void *fdt)
{
	char name[40];
	snprintf(name, sizeof(name), "pci@%llx", (unsigned long long)PCI_ECAM_BASE);
	int rc = fdt_begin_node(fdt, name);
	rc = rc ?: fdt_property_string(fdt, "compatible", "pci-host-ecam-generic");
	rc = rc ?: fdt_property_string(fdt, "device_type", "pci");
	rc = rc ?: prop_u64_pair(fdt, "reg", PCI_ECAM_BASE, PCI_ECAM_SIZE);
	fdt32_t bus_range[2] = {0, 0};
	rc = rc ?: fdt_property(fdt, "bus-range", bus_range, sizeof(bus_range));
	rc = rc ?: fdt_property_u32(fdt, "#address-cells", 3);
	rc = rc ?: fdt_property_u32(fdt, "#size-cells", 2);
	/* One 32-bit memory window: (space code 0x02000000, pci addr, cpu addr, size). */
	uint64_t size = PCI_MMIO_END - PCI_MMIO_BASE;
	fdt32_t ranges[7] = {cpu_to_fdt32(0x02000000),
			     cpu_to_fdt32(0),
			     cpu_to_fdt32((uint32_t)PCI_MMIO_BASE),
			     cpu_to_fdt32(0),
			     cpu_to_fdt32((uint32_t)PCI_MMIO_BASE),
			     cpu_to_fdt32((uint32_t)(size >> 32)),
			     cpu_to_fdt32((uint32_t)size)};
	rc = rc ?: fdt_property(fdt, "ranges", ranges, sizeof(ranges));
	rc = rc ?: fdt_property(fdt, "dma-coherent", NULL, 0);
	return rc ?: fdt_end_node(fdt);
}

int x86_fdt_build(const struct guest_mem *mem, int nr_cpus, const struct dsdt_config *devices,
		  uint8_t **blob, size_t *size)
{
	void *fdt = calloc(1, FDT_MAX_SIZE);
	if (!fdt) {
		log_error("out of memory for the device tree");
		return -1;
	}
	int rc = fdt_create(fdt, FDT_MAX_SIZE);
	rc = rc ?: fdt_finish_reservemap(fdt);
	rc = rc ?: fdt_begin_node(fdt, "");
	rc = rc ?: fdt_property_string(fdt, "compatible", "minivmm,x86-64");
	rc = rc ?: fdt_property_string(fdt, "model", "minivmm");
	rc = rc ?: fdt_property_u32(fdt, "#address-cells", 2);
	rc = rc ?: fdt_property_u32(fdt, "#size-cells", 2);
	rc = rc ?: fdt_property_u32(fdt, "interrupt-parent", PHANDLE_IOAPIC);
	rc = rc ?: fdt_begin_node(fdt, "chosen");
	rc = rc ?: fdt_property_string(fdt, "stdout-path", "/serial@3f8");
	rc = rc ?: fdt_end_node(fdt);
	rc = rc ?: add_memory(fdt, mem);
	rc = rc ?: add_cpus(fdt, nr_cpus);
	rc = rc ?: add_ioapic(fdt);
	rc = rc ?: add_serial(fdt);
	rc = rc ?: add_virtio_mmio(fdt, devices);
	rc = rc ?: add_pci(fdt);
	rc = rc ?: fdt_end_node(fdt);
	rc = rc ?: fdt_finish(fdt);
	rc = rc ?: fdt_pack(fdt);
	if (rc) {
		log_error("cannot build the device tree: %s", fdt_strerror(rc));
		free(fdt);
		return -1;
	}
	*blob = fdt;
	*size = fdt_totalsize(fdt);
	return 0;
}
