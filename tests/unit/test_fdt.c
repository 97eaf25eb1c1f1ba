/* The device tree describes the machine: memory regions, each CPU, serial, virtio-mmio devices
 * with their interrupts, and the PCI host bridge. Read back with libfdt. */
#include <criterion/criterion.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtio/rng.h"
#include "vmm/fdt.h"
#include "vmm/kinds/kinds.h"
#include "vmm/virtio_devices.h"
#include "vmm/vm.h"

static struct vm vm;
static struct virtio_devices devs;
static struct device_config mmio_cfg = {.kind = &virtio_rng_kind, .transport = TRANSPORT_MMIO};

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
	guest_mem_init_with(&vm.mem, (uint8_t *)0x1000, 5ULL << 30);
	vm.nr_vcpus = 3;
	devs.nr = 1;
	devs.slots[0].cfg = &mmio_cfg;
	devs.slots[0].mmio.base = 0xd0001000;
	devs.slots[0].mmio.irq = 6;

	uint8_t *blob;
	size_t size;
	cr_assert_eq(fdt_build_machine(&vm, &devs, &blob, &size), 0);
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
