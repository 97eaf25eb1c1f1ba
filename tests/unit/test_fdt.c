/* The device tree describes the machine: memory regions, each CPU, serial, virtio-mmio devices
 * with their interrupts, and the PCI host bridge. Read back with libfdt. */
#include <criterion/criterion.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/dsdt.h"
#include "arch/x86/fdt.h"
#include "base/guest_mem.h"

static struct guest_mem mem;

/* reg = <address size> as host integers (properties are only 4-byte aligned: copy them). */
static const uint64_t *reg_of(const void *fdt, const char *path)
{
	static uint64_t out[2];
	int node = fdt_path_offset(fdt, path);
	cr_assert_geq(node, 0, "no node %s", path);
	int len;
	const void *reg = fdt_getprop(fdt, node, "reg", &len);
	cr_assert_not_null(reg, "%s has no reg", path);
	cr_assert_eq(len, 16);
	fdt64_t raw[2];
	memcpy(raw, reg, sizeof(raw));
	out[0] = fdt64_to_cpu(raw[0]);
	out[1] = fdt64_to_cpu(raw[1]);
	return out;
}

Test(fdt, describes_the_machine)
{
	/* 5 GiB of RAM: two memory nodes around the MMIO hole. Backing memory is not touched. */
	guest_mem_init_with(&mem, (uint8_t *)0x1000, 5ULL << 30);
	const struct dsdt_mmio_device mmio = {.base = 0xd0001000, .size = 0x200, .gsi = 6};
	const struct dsdt_config devices = {.virtio_mmio = &mmio, .nr_virtio_mmio = 1};

	uint8_t *blob;
	size_t size;
	cr_assert_eq(x86_fdt_build(&mem, 3, &devices, &blob, &size), 0);
	cr_assert_eq(fdt_check_header(blob), 0);
	cr_assert_eq(fdt_totalsize(blob), size);

	const uint64_t *r = reg_of(blob, "/memory@0");
	cr_assert_eq(r[0], 0);
	cr_assert_eq(r[1], 3ULL << 30);
	r = reg_of(blob, "/memory@100000000");
	cr_assert_eq(r[0], 4ULL << 30);
	cr_assert_eq(r[1], 2ULL << 30);

	for (int i = 0; i < 3; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/cpus/cpu@%d", i);
		int node = fdt_path_offset(blob, path);
		cr_assert_geq(node, 0, "%s missing", path);
		int len;
		const fdt32_t *reg = fdt_getprop(blob, node, "reg", &len);
		cr_assert_eq(fdt32_to_cpu(*reg), (uint32_t)i);
	}
	cr_assert_lt(fdt_path_offset(blob, "/cpus/cpu@3"), 0);

	r = reg_of(blob, "/virtio_mmio@d0001000");
	cr_assert_eq(r[0], 0xd0001000);
	cr_assert_eq(r[1], 0x200);
	int node = fdt_path_offset(blob, "/virtio_mmio@d0001000");
	int len;
	const fdt32_t *irq = fdt_getprop(blob, node, "interrupts", &len);
	cr_assert_eq(len, 8);
	cr_assert_eq(fdt32_to_cpu(irq[0]), 6);
	cr_assert_eq(fdt_node_check_compatible(blob, node, "virtio,mmio"), 0);

	node = fdt_path_offset(blob, "/serial@3f8");
	cr_assert_eq(fdt_node_check_compatible(blob, node, "ns16550a"), 0);
	node = fdt_path_offset(blob, "/pci@e0000000");
	cr_assert_eq(fdt_node_check_compatible(blob, node, "pci-host-ecam-generic"), 0);
	free(blob);
}

Test(fdt, without_virtio_mmio_devices)
{
	guest_mem_init_with(&mem, (uint8_t *)0x1000, 64ULL << 20);
	uint8_t *blob;
	size_t size;
	cr_assert_eq(x86_fdt_build(&mem, 1, NULL, &blob, &size), 0);
	cr_assert_geq(fdt_path_offset(blob, "/memory@0"), 0);
	cr_assert_geq(fdt_path_offset(blob, "/cpus/cpu@0"), 0);
	int node;
	fdt_for_each_subnode(node, blob, 0)
	    cr_assert_neq(strncmp(fdt_get_name(blob, node, NULL), "virtio_mmio@", 12), 0);
	free(blob);
}
