#include "virtio_devices.h"

#include <stdio.h>
#include <string.h>

#include "devices/virtio/rng.h"
#include "vmm/log.h"
#include "vmm/vm.h"

static void destroy_rng(void *model)
{
	virtio_rng_destroy(model);
}

/* Instantiate the device model for slot; the one place that knows every device kind. */
static int create_model(struct virtio_slot *slot, struct vm *vm, const char *label)
{
	switch (slot->cfg->kind) {
	case DEVICE_RNG:
		slot->model = virtio_rng_create(&slot->dev, &vm->mem, &vm->loop, label);
		slot->destroy_model = destroy_rng;
		return slot->model ? 0 : -1;
	}
	return -1;
}

static const char *kind_name(enum device_kind kind)
{
	switch (kind) {
	case DEVICE_RNG:
		return "rng";
	}
	return "device";
}

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

int virtio_devices_create(struct virtio_devices *devs, struct vm *vm, char *cmdline, size_t len)
{
	memset(devs, 0, sizeof(*devs));
	int per_kind[8] = {0};
	for (int i = 0; i < vm->cfg->nr_devices; i++) {
		struct virtio_slot *slot = &devs->slots[devs->nr];
		slot->cfg = &vm->cfg->devices[i];
		char label[32];
		snprintf(label, sizeof(label), "virtio-%s%d", kind_name(slot->cfg->kind),
			 per_kind[slot->cfg->kind]++);
		if (create_model(slot, vm, label))
			return -1;
		devs->nr++;
		if (slot->cfg->transport == TRANSPORT_MMIO) {
			if (virtio_mmio_attach(&slot->mmio, vm, &vm->loop, &slot->dev,
					       devs->nr_mmio))
				return -1;
			devs->nr_mmio++;
			char entry[96];
			virtio_mmio_cmdline_entry(&slot->mmio, entry, sizeof(entry));
			if (append(cmdline, len, entry))
				return -1;
			log_info("%s: virtio-mmio at 0x%llx, irq %d", label,
				 (unsigned long long)slot->mmio.base, slot->mmio.irq);
		} else {
			log_error("%s: the virtio-pci transport is not available yet; use "
				  "transport=mmio",
				  label);
			return -1;
		}
	}
	return 0;
}

void virtio_devices_destroy(struct virtio_devices *devs, struct vm *vm)
{
	for (int i = 0; i < devs->nr; i++) {
		struct virtio_slot *slot = &devs->slots[i];
		if (slot->cfg->transport == TRANSPORT_MMIO)
			virtio_mmio_detach(&slot->mmio, &vm->loop);
		if (slot->destroy_model)
			slot->destroy_model(slot->model);
	}
	devs->nr = 0;
}
