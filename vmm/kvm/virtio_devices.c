#include "virtio_devices.h"

#include <stdio.h>
#include <string.h>

#include "arch/x86/machine.h"
#include "devices/virtio/pci.h"
#include "base/log.h"
#include "vmm/kinds/device_registry.h"
#include "gsi_routing.h"
#include "kvm_irq.h"
#include "vmm/sandbox/seccomp.h"
#include "vm.h"

static int append(char *cmdline, size_t len, const char *entry)
{
	size_t used = strlen(cmdline);
	int n = snprintf(cmdline + used, len - used, "%s%s", used ? " " : "", entry);
	if (n < 0 || (size_t)n >= len - used) {
		log_error("kernel command line too long for the virtio-mmio device list");
		return -1;
	}
	return 0;
}

/* ---- the transports' host interface, bound to the VM's KVM ioeventfds, irqfds, IRQ lines,
 * MMIO bus, MSI routes and I/O thread ---- */

static int host_ioeventfd(void *opaque, uint64_t addr, uint32_t len, bool datamatch, uint64_t value,
			  int fd, bool add)
{
	return add ? kvm_ioeventfd_add(opaque, addr, len, false, datamatch, value, fd)
		   : kvm_ioeventfd_del(opaque, addr, len, false, datamatch, value, fd);
}

static int host_irqfd(void *opaque, int gsi, int fd, bool add)
{
	return add ? kvm_irqfd_add(opaque, gsi, fd) : kvm_irqfd_del(opaque, gsi, fd);
}

static void host_set_irq(void *opaque, int gsi, int level)
{
	vm_set_irq(opaque, gsi, level);
}

static int host_register_mmio(void *opaque, uint64_t base, uint64_t len, io_handler_fn handler,
			      void *ctx)
{
	struct vm *vm = opaque;
	return io_bus_register(&vm->mmio, base, len, handler, ctx);
}

static int host_msi_route_alloc(void *opaque)
{
	struct vm *vm = opaque;
	return gsi_route_msi_alloc(vm->gsi_routing);
}

static void host_msi_route_free(void *opaque, int gsi)
{
	struct vm *vm = opaque;
	gsi_route_msi_free(vm->gsi_routing, gsi);
}

static int host_msi_route_set(void *opaque, int gsi, uint32_t addr_lo, uint32_t addr_hi,
			      uint32_t data)
{
	struct vm *vm = opaque;
	if (gsi_route_msi_set(vm->gsi_routing, gsi, addr_lo, addr_hi, data))
		return -1;
	return gsi_route_msi_mask(vm->gsi_routing, gsi, false);
}

static int host_msi_route_commit(void *opaque)
{
	struct vm *vm = opaque;
	return gsi_routing_commit(vm->gsi_routing);
}

static struct virtio_transport_host vm_host(struct vm *vm)
{
	return (struct virtio_transport_host){
	    .opaque = vm,
	    .ioeventfd = host_ioeventfd,
	    .irqfd = host_irqfd,
	    .set_irq = host_set_irq,
	    .register_mmio = host_register_mmio,
	    .msi_route_alloc = host_msi_route_alloc,
	    .msi_route_free = host_msi_route_free,
	    .msi_route_set = host_msi_route_set,
	    .msi_route_commit = host_msi_route_commit,
	    .loop = &vm->loop,
	};
}

int virtio_devices_create(struct virtio_devices *devs, struct vm *vm, char *cmdline, size_t len)
{
	memset(devs, 0, sizeof(*devs));
	const struct virtio_transport_host host = vm_host(vm);
	const struct device_env env = {.mem = &vm->mem,
				       .loop = &vm->loop,
				       .ram_bytes = vm->cfg->memory_bytes,
				       .console = vm->console,
				       .virtiofsd = vm->cfg->virtiofsd_path,
				       .vports = vm->cfg->vports,
				       .nr_vports = vm->cfg->nr_vports};
	int per_kind[MAX_DEVICE_KINDS] = {0};
	for (int i = 0; i < vm->cfg->nr_devices; i++) {
		struct virtio_slot *slot = &devs->slots[devs->nr];
		slot->cfg = &vm->cfg->devices[i];
		const struct device_kind_desc *kind = slot->cfg->kind;
		int k = 0;
		while (device_kinds[k] && device_kinds[k] != kind)
			k++;
		char label[32];
		snprintf(label, sizeof(label), "%s%d", kind->label, per_kind[k]++);
		if (kind->create(slot, &env, label))
			return -1;
		devs->nr++;
		if (slot->cfg->transport == TRANSPORT_MMIO) {
			uint64_t base;
			int irq;
			if (x86_virtio_mmio_slot(devs->nr_mmio, &base, &irq) ||
			    virtio_mmio_attach(&slot->mmio, &host, &slot->dev, base, irq))
				return -1;
			devs->nr_mmio++;
			char entry[96];
			virtio_mmio_cmdline_entry(&slot->mmio, entry, sizeof(entry));
			if (append(cmdline, len, entry))
				return -1;
			log_info("%s: virtio-mmio at 0x%llx, irq %d", label,
				 (unsigned long long)slot->mmio.base, slot->mmio.irq);
		} else {
			char err[160];
			slot->pci = virtio_pci_create(&host, vm->pci, &slot->dev, err, sizeof(err));
			if (!slot->pci) {
				log_error("%s: %s", label, err);
				return -1;
			}
		}
	}
	return 0;
}

void virtio_devices_report(const struct virtio_devices *devs)
{
	for (int i = 0; i < devs->nr; i++) {
		const struct virtio_dev *dev = &devs->slots[i].dev;
		log_info("%s: kicks %llu (I/O thread wake-ups %llu), interrupts %llu%s", dev->label,
			 (unsigned long long)dev->kicks, (unsigned long long)dev->notifications,
			 (unsigned long long)dev->interrupts, dev->broken ? ", needs reset" : "");
	}
}

void virtio_devices_seccomp_needs(const struct vm_config *cfg, struct seccomp_needs *needs)
{
	for (int i = 0; i < cfg->nr_devices; i++) {
		const struct device_config *dev = &cfg->devices[i];
		if (dev->kind->seccomp_needs)
			dev->kind->seccomp_needs(dev->parsed, needs);
	}
}

void virtio_devices_destroy(struct virtio_devices *devs)
{
	for (int i = 0; i < devs->nr; i++) {
		struct virtio_slot *slot = &devs->slots[i];
		if (slot->cfg->transport == TRANSPORT_MMIO)
			virtio_mmio_detach(&slot->mmio);
		else if (slot->pci)
			virtio_pci_destroy(slot->pci);
		if (slot->cfg->kind->destroy)
			slot->cfg->kind->destroy(slot);
	}
	devs->nr = 0;
}
