/* libFuzzer target: the virtio-pci transport driven by arbitrary guest accesses to its PCI
 * configuration space (ECAM) and its BAR (common, notify, ISR, device, MSI-X regions), with a
 * virtio-rng device behind it and guest memory whose contents come from the input too.
 * Input: u8 n, then n 8-byte operations {u8 kind, u8 flags, u16 offset, u32 value}, then bytes
 * copied to the start of guest RAM (rings, descriptors, buffers). kind (mod 4) 0: ECAM config
 * access to the function's 4 KiB, 1: access to BAR 0 (offset mod 16 KiB; mapped only once the
 * command register enables memory decode), 2: kick queue value & 1 directly, 3: access to the
 * configuration ports 0xcf8-0xcff (offset mod 8). flags bits 0-1: log2 of the access length,
 * bit 2: write. tests/fuzz/gen_corpus_virtio_pci.py writes seeds that get a driver to DRIVER_OK
 * and kick its queue. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/layout.h"
#include "devices/pci.h"
#include "devices/virtio/pci.h"
#include "devices/virtio/rng.h"
#include "base/event_loop.h"
#include "base/log.h"

#define RAM_SIZE (1u << 20)
#define SEED_LEN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void set_irq(void *opaque, int gsi, int level)
{
	(void)opaque;
	(void)gsi;
	(void)level;
}

static int irqfd(void *opaque, int gsi, int fd, bool add)
{
	(void)opaque;
	(void)gsi;
	(void)fd;
	(void)add;
	return 0;
}

/* MSI routes that only count: a GSI per vector, so that the transport's route updates run. */
static int next_gsi;

static int msi_route_alloc(void *opaque)
{
	(void)opaque;
	return next_gsi++;
}

static void msi_route_free(void *opaque, int gsi)
{
	(void)opaque;
	(void)gsi;
}

static int msi_route_set(void *opaque, int gsi, uint32_t addr_lo, uint32_t addr_hi, uint32_t data)
{
	(void)opaque;
	(void)addr_lo;
	(void)addr_hi;
	(void)data;
	return gsi >= 24 && gsi < next_gsi ? 0 : -1;
}

static int msi_route_commit(void *opaque)
{
	(void)opaque;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *ram;
	static struct event_loop loop;
	if (!ram) {
		ram = malloc(RAM_SIZE);
		log_set_quiet(true);
		if (event_loop_init(&loop))
			abort();
	}
	if (size < 1)
		return 0;
	size_t nops = data[0];
	data++;
	size--;
	if (nops * 8 > size)
		nops = size / 8;
	memset(ram, 0, RAM_SIZE);
	size_t rest = size - nops * 8;
	memcpy(ram, data + nops * 8, rest < SEED_LEN ? rest : SEED_LEN);

	struct guest_mem mem;
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	struct io_bus mmio, pio;
	io_bus_init(&mmio);
	io_bus_init(&pio);
	struct pci_bus bus;
	pci_bus_init(&bus, &mmio, PCI_MMIO_BASE, PCI_MMIO_END);
	if (pci_bus_register(&bus, &pio, PCI_ECAM_BASE))
		abort();
	next_gsi = 24;
	struct virtio_dev dev;
	struct virtio_rng *rng = virtio_rng_create(&dev, &mem, &loop, "fuzz-rng");
	struct virtio_pci vp;
	struct virtio_transport_host host = {.set_irq = set_irq,
					     .irqfd = irqfd,
					     .msi_route_alloc = msi_route_alloc,
					     .msi_route_free = msi_route_free,
					     .msi_route_set = msi_route_set,
					     .msi_route_commit = msi_route_commit,
					     .loop = &loop};
	char err[128];
	if (virtio_pci_init(&vp, &dev, &host, err, sizeof(err)))
		abort();
	int slot = pci_bus_add_device(&bus, &vp.pci);
	if (slot < 1)
		abort();

	for (size_t i = 0; i < nops; i++, data += 8) {
		uint8_t kind = data[0] % 4;
		uint32_t len = 1u << (data[1] & 3);
		uint16_t offset;
		uint32_t value;
		memcpy(&offset, data + 2, 2);
		memcpy(&value, data + 4, 4);
		uint8_t buf[8] = {0};
		memcpy(buf, &value, 4);
		bool is_write = data[1] & 4;
		if (kind == 0)
			pci_bus_ecam_io(&bus, (uint64_t)slot << 15 | (offset & 0xfff), buf, len,
					is_write);
		else if (kind == 1)
			io_bus_access(&mmio, PCI_MMIO_BASE + (offset & 0x3fff), buf, len, is_write);
		else if (kind == 2)
			virtio_dev_queue_notify(&dev, value & 1);
		else
			pci_bus_config_port_io(&bus, offset & 7, buf, len, is_write);
		event_loop_run_once(&loop, 0);
	}
	pci_bus_destroy(&bus);
	virtio_pci_cleanup(&vp);
	virtio_dev_set_status(&dev, 0);
	virtio_rng_destroy(rng);
	pthread_mutex_destroy(&dev.lock);
	io_bus_destroy(&mmio);
	io_bus_destroy(&pio);
	return 0;
}
