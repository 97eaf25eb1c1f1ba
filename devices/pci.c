#include "pci.h"

#include <inttypes.h>
#include <string.h>

#include "base/log.h"

#define CONFIG_ADDRESS_ENABLE 0x80000000u
#define ECAM_BUS_SHIFT	      20
#define ECAM_DEV_SHIFT	      15
#define ECAM_FN_SHIFT	      12

uint32_t pci_cfg_get(const struct pci_device *d, uint32_t offset, uint32_t len)
{
	uint32_t v = 0;
	if (len > 4 || offset > PCI_CFG_SIZE || len > PCI_CFG_SIZE - offset)
		return 0;
	for (uint32_t i = 0; i < len; i++)
		v |= (uint32_t)d->cfg[offset + i] << (8 * i);
	return v;
}

void pci_cfg_set(struct pci_device *d, uint32_t offset, uint32_t len, uint32_t value)
{
	if (len > 4 || offset > PCI_CFG_SIZE || len > PCI_CFG_SIZE - offset)
		return;
	for (uint32_t i = 0; i < len; i++)
		d->cfg[offset + i] = (uint8_t)(value >> (8 * i));
}

void pci_device_set_wmask(struct pci_device *d, uint32_t offset, uint32_t len, uint32_t mask)
{
	if (len > 4 || offset > PCI_CFG_SIZE || len > PCI_CFG_SIZE - offset)
		return;
	for (uint32_t i = 0; i < len; i++)
		d->wmask[offset + i] = (uint8_t)(mask >> (8 * i));
}

void pci_device_init(struct pci_device *d, uint16_t vendor, uint16_t device, uint8_t revision,
		     uint32_t class_code, uint16_t subsys_vendor, uint16_t subsys_id, uint8_t pin,
		     const struct pci_device_ops *ops, void *opaque)
{
	memset(d, 0, sizeof(*d));
	d->ops = ops;
	d->opaque = opaque;
	d->slot = -1;
	d->cap_end = PCI_CAP_START;
	for (int i = 0; i < PCI_NR_BARS; i++) {
		d->bars[i].dev = d;
		d->bars[i].index = i;
	}
	pci_cfg_set(d, PCI_VENDOR_ID, 2, vendor);
	pci_cfg_set(d, PCI_DEVICE_ID, 2, device);
	pci_cfg_set(d, PCI_REVISION_ID, 1, revision);
	pci_cfg_set(d, PCI_CLASS_PROG, 3, class_code);
	pci_cfg_set(d, PCI_SUBSYS_VENDOR, 2, subsys_vendor);
	pci_cfg_set(d, PCI_SUBSYS_ID, 2, subsys_id);
	pci_cfg_set(d, PCI_INTERRUPT_PIN, 1, pin <= 4 ? pin : 0);
	pci_device_set_wmask(d, PCI_COMMAND, 2,
			     PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER | PCI_COMMAND_INTX_DISABLE);
	pci_device_set_wmask(d, PCI_CACHE_LINE, 1, 0xff);
	pci_device_set_wmask(d, PCI_INTERRUPT_LINE, 1, 0xff);
}

int pci_device_add_bar(struct pci_device *d, int bar, uint64_t size, bool is64, bool prefetch)
{
	if (bar < 0 || bar >= PCI_NR_BARS - (is64 ? 1 : 0) || size < 16 || (size & (size - 1)) ||
	    (!is64 && size > 0x80000000ULL) || d->bars[bar].size || (is64 && d->bars[bar + 1].size))
		return -1;
	if (bar > 0 && d->bars[bar - 1].is64)
		return -1; /* the upper half of a 64-bit BAR */
	d->bars[bar].size = size;
	d->bars[bar].is64 = is64;
	uint32_t type = (is64 ? PCI_BAR_MEM_64 : 0) | (prefetch ? PCI_BAR_MEM_PREFETCH : 0);
	uint64_t mask = ~(size - 1);
	uint32_t off = PCI_BAR0 + 4 * (uint32_t)bar;
	pci_cfg_set(d, off, 4, type);
	pci_device_set_wmask(d, off, 4, (uint32_t)mask & 0xfffffff0u);
	if (is64)
		pci_device_set_wmask(d, off + 4, 4, (uint32_t)(mask >> 32));
	return 0;
}

uint8_t pci_device_add_cap(struct pci_device *d, uint8_t cap_id, uint8_t len)
{
	uint32_t off = d->cap_end;
	if (len < 2 || off + len > PCI_CFG_SIZE)
		return 0;
	memset(d->cfg + off, 0, len);
	memset(d->wmask + off, 0, len);
	d->cfg[off] = cap_id;
	if (d->last_cap)
		d->cfg[d->last_cap + 1] = (uint8_t)off;
	else
		d->cfg[PCI_CAP_PTR] = (uint8_t)off;
	d->last_cap = (uint8_t)off;
	d->cap_end = (uint16_t)((off + len + 3) & ~3u); /* next one dword-aligned */
	pci_cfg_set(d, PCI_STATUS, 2, pci_cfg_get(d, PCI_STATUS, 2) | PCI_STATUS_CAP_LIST);
	return (uint8_t)off;
}

static uint64_t bar_address(const struct pci_device *d, int i)
{
	uint32_t off = PCI_BAR0 + 4 * (uint32_t)i;
	uint64_t addr = pci_cfg_get(d, off, 4) & 0xfffffff0u;
	if (d->bars[i].is64)
		addr |= (uint64_t)pci_cfg_get(d, off + 4, 4) << 32;
	return addr;
}

static void bar_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct pci_bar *b = opaque;
	struct pci_device *d = b->dev;
	if (d->ops && d->ops->bar_access)
		d->ops->bar_access(d, b->index, offset, data, len, is_write);
	else if (!is_write)
		memset(data, 0xff, len);
}

static void bar_unmap(struct pci_bus *bus, struct pci_device *d, struct pci_bar *b)
{
	if (!b->mapped)
		return;
	io_bus_unregister(bus->mmio, b->mapped_addr, b);
	b->mapped = false;
	if (d->ops && d->ops->bar_mapped)
		d->ops->bar_mapped(d, b->index, b->mapped_addr, false);
}

/* Make the MMIO bus match the command register and BAR values. Bus lock held. */
static void update_mappings(struct pci_bus *bus, struct pci_device *d)
{
	bool decode = pci_cfg_get(d, PCI_COMMAND, 2) & PCI_COMMAND_MEMORY;
	for (int i = 0; i < PCI_NR_BARS; i++) {
		struct pci_bar *b = &d->bars[i];
		if (!b->size)
			continue;
		uint64_t addr = bar_address(d, i);
		/* Address 0 or a range that wraps (the all-ones sizing pattern) never decodes. */
		bool want = decode && addr != 0 && addr + b->size > addr;
		if (b->mapped && (!want || b->mapped_addr != addr))
			bar_unmap(bus, d, b);
		if (!want || b->mapped)
			continue;
		if (io_bus_register(bus->mmio, addr, b->size, bar_io, b)) {
			log_warn_ratelimited(&bus->bar_overlap_log,
					     "pci %02x.0: BAR%d at 0x%" PRIx64
					     " overlaps another device; not "
					     "mapped",
					     d->slot, i, addr);
			continue;
		}
		b->mapped = true;
		b->mapped_addr = addr;
		if (d->ops && d->ops->bar_mapped)
			d->ops->bar_mapped(d, i, addr, true);
	}
}

void pci_bus_init(struct pci_bus *bus, struct io_bus *mmio, uint64_t mmio_base, uint64_t mmio_end)
{
	memset(bus, 0, sizeof(*bus));
	pthread_mutex_init(&bus->lock, NULL);
	bus->mmio = mmio;
	bus->mmio_next = mmio_base;
	bus->mmio_end = mmio_end;
	pci_device_init(&bus->host_bridge, PCI_HOST_VENDOR_ID, PCI_HOST_DEVICE_ID, 0,
			PCI_CLASS_HOST, 0, 0, 0, NULL, NULL);
	bus->host_bridge.bus = bus;
	bus->host_bridge.slot = 0;
	bus->slots[0] = &bus->host_bridge;
}

void pci_bus_destroy(struct pci_bus *bus)
{
	pthread_mutex_lock(&bus->lock);
	for (int s = 0; s < PCI_NR_SLOTS; s++) {
		struct pci_device *d = bus->slots[s];
		for (int i = 0; d && i < PCI_NR_BARS; i++)
			bar_unmap(bus, d, &d->bars[i]);
	}
	pthread_mutex_unlock(&bus->lock);
	pthread_mutex_destroy(&bus->lock);
}

int pci_bus_add_device(struct pci_bus *bus, struct pci_device *d)
{
	pthread_mutex_lock(&bus->lock);
	int slot = -1;
	for (int s = 1; s < PCI_NR_SLOTS && slot < 0; s++)
		if (!bus->slots[s])
			slot = s;
	uint64_t next = bus->mmio_next;
	for (int i = 0; slot >= 0 && i < PCI_NR_BARS; i++) {
		struct pci_bar *b = &d->bars[i];
		if (!b->size)
			continue;
		uint64_t addr = (next + b->size - 1) & ~(b->size - 1);
		if (addr < next || addr > bus->mmio_end || bus->mmio_end - addr < b->size) {
			slot = -1;
			break;
		}
		uint32_t off = PCI_BAR0 + 4 * (uint32_t)i;
		pci_cfg_set(d, off, 4, (pci_cfg_get(d, off, 4) & 0xf) | (uint32_t)addr);
		if (b->is64)
			pci_cfg_set(d, off + 4, 4, (uint32_t)(addr >> 32));
		next = addr + b->size;
	}
	if (slot >= 0) {
		bus->mmio_next = next;
		bus->slots[slot] = d;
		d->bus = bus;
		d->slot = slot;
	}
	pthread_mutex_unlock(&bus->lock);
	return slot;
}

static struct pci_device *lookup(struct pci_bus *bus, uint32_t busnr, uint32_t dev, uint32_t fn)
{
	if (busnr != 0 || fn != 0 || dev >= PCI_NR_SLOTS)
		return NULL;
	return bus->slots[dev];
}

/* One configuration access to reg (< 4096) of a function; len 1..8 bytes. */
static void config_access(struct pci_bus *bus, struct pci_device *d, uint32_t reg, uint8_t *data,
			  uint32_t len, bool is_write)
{
	if (!d || reg >= PCI_EXT_CFG_SIZE || len > PCI_EXT_CFG_SIZE - reg) {
		if (!is_write)
			memset(data, 0xff, len); /* no function here: vendor 0xffff */
		return;
	}
	pthread_mutex_lock(&bus->lock);
	if (!is_write) {
		if (reg < PCI_CFG_SIZE && d->ops && d->ops->config_read)
			d->ops->config_read(d, reg,
					    len <= PCI_CFG_SIZE - reg ? len : PCI_CFG_SIZE - reg);
		for (uint32_t i = 0; i < len; i++)
			data[i] = reg + i < PCI_CFG_SIZE ? d->cfg[reg + i] : 0;
		pthread_mutex_unlock(&bus->lock);
		return;
	}
	if (reg >= PCI_CFG_SIZE) {
		pthread_mutex_unlock(&bus->lock); /* extended space: nothing implemented */
		return;
	}
	uint32_t n = len <= PCI_CFG_SIZE - reg ? len : PCI_CFG_SIZE - reg;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t m = d->wmask[reg + i];
		d->cfg[reg + i] = (uint8_t)((d->cfg[reg + i] & ~m) | (data[i] & m));
	}
	uint32_t end = reg + n;
	bool touches_decode = reg < PCI_COMMAND + 2 && end > PCI_COMMAND;
	bool touches_bars = reg < PCI_BAR0 + 4 * PCI_NR_BARS && end > PCI_BAR0;
	if (touches_decode || touches_bars) {
		update_mappings(bus, d);
		/* A range d let go of may be what another device's refused BAR waits for. */
		for (int s = 0; s < PCI_NR_SLOTS; s++)
			if (bus->slots[s] && bus->slots[s] != d)
				update_mappings(bus, bus->slots[s]);
	}
	if (d->ops && d->ops->config_written)
		d->ops->config_written(d, reg, n);
	pthread_mutex_unlock(&bus->lock);
}

void pci_bus_config_port_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len,
			    bool is_write)
{
	struct pci_bus *bus = opaque;
	if (offset < 4) {
		/* Only a dword access at 0xcf8 is the address register. */
		if (offset != 0 || len != 4) {
			if (!is_write)
				memset(data, 0xff, len);
			return;
		}
		pthread_mutex_lock(&bus->lock);
		if (is_write)
			bus->config_address = (uint32_t)data[0] | (uint32_t)data[1] << 8 |
					      (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
		else
			for (int i = 0; i < 4; i++)
				data[i] = (uint8_t)(bus->config_address >> (8 * i));
		pthread_mutex_unlock(&bus->lock);
		return;
	}
	pthread_mutex_lock(&bus->lock);
	uint32_t a = bus->config_address;
	pthread_mutex_unlock(&bus->lock);
	struct pci_device *d = NULL;
	uint32_t reg = (a & 0xfc) + (uint32_t)(offset - 4);
	if (a & CONFIG_ADDRESS_ENABLE)
		d = lookup(bus, (a >> 16) & 0xff, (a >> 11) & 0x1f, (a >> 8) & 7);
	/* Mechanism #1 reaches the first 256 bytes only; an access cannot leave its dword. */
	if (reg + len > (a & 0xfc) + 4)
		d = NULL;
	config_access(bus, d, reg, data, len, is_write);
}

void pci_bus_ecam_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct pci_bus *bus = opaque;
	uint32_t reg = (uint32_t)(offset & (PCI_EXT_CFG_SIZE - 1));
	struct pci_device *d = lookup(bus, (uint32_t)(offset >> ECAM_BUS_SHIFT),
				      (uint32_t)(offset >> ECAM_DEV_SHIFT) & 0x1f,
				      (uint32_t)(offset >> ECAM_FN_SHIFT) & 7);
	config_access(bus, d, reg, data, len, is_write);
}

int pci_bus_register(struct pci_bus *bus, struct io_bus *pio, uint64_t ecam_base)
{
	if (io_bus_register(pio, PCI_CONFIG_ADDRESS_PORT, PCI_CONFIG_PORTS_LEN,
			    pci_bus_config_port_io, bus)) {
		log_error("pci: ports 0xcf8-0xcff are taken");
		return -1;
	}
	if (io_bus_register(bus->mmio, ecam_base, 1ULL << ECAM_BUS_SHIFT, pci_bus_ecam_io, bus)) {
		log_error("pci: ECAM window at 0x%" PRIx64 " overlaps another device", ecam_base);
		io_bus_unregister(pio, PCI_CONFIG_ADDRESS_PORT, bus);
		return -1;
	}
	return 0;
}
