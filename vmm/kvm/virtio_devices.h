/* The virtio devices of a VM: created from the configuration, each on its chosen transport. */
#ifndef MINIVMM_VIRTIO_DEVICES_H
#define MINIVMM_VIRTIO_DEVICES_H

#include <stddef.h>

#include "devices/virtio/mmio.h"
#include "devices/virtio/virtio.h"
#include "vmm/cli/config.h"

struct vm;

struct virtio_slot {
	const struct device_config *cfg;
	struct virtio_dev dev;
	void *model;		 /* the device model (struct virtio_rng, ...), owned by its kind */
	struct virtio_mmio mmio; /* when cfg->transport is TRANSPORT_MMIO */
	void *pci;		 /* when cfg->transport is TRANSPORT_PCI */
};

struct virtio_devices {
	struct virtio_slot slots[MAX_DEVICES];
	int nr;
	int nr_mmio;
};

/* Create every configured device and attach it; appends the kernel command-line entries that
 * announce virtio-mmio devices to cmdline (capacity len). Returns 0 or -1 (logged). */
int virtio_devices_create(struct virtio_devices *devs, struct vm *vm, char *cmdline, size_t len);
/* One line per device with its notification and interrupt counts (after the VM stopped). */
void virtio_devices_report(const struct virtio_devices *devs);
/* What the configured devices need the seccomp filters to keep (vmm/sandbox/seccomp.h). */
struct seccomp_needs;
void virtio_devices_seccomp_needs(const struct vm_config *cfg, struct seccomp_needs *needs);
void virtio_devices_destroy(struct virtio_devices *devs);

#endif
