/* Every kind of virtio device the command line can ask for. A new device is one entry in
 * device_registry.c plus its own files: the core never names device kinds. */
#ifndef MINIVMM_DEVICE_REGISTRY_H
#define MINIVMM_DEVICE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

struct seccomp_needs;
struct virtio_slot;
struct vm;

struct device_kind_desc {
	const char *flag;   /* "--rng" without the dashes */
	const char *label;  /* device label prefix: "virtio-rng" */
	const char *usage;  /* help text: "[,transport=mmio|pci]" and a description */
	bool needs_options; /* the flag must have options (e.g. --net tap=NAME) */
	/* Validate the device's own options (without transport=) into a malloc'd *parsed; return
	 * -1 with a one-line reason in err. Runs at command-line parsing, before any set-up. */
	int (*parse)(const char *options, void **parsed, char *err, size_t errlen);
	/* Create the device model: initialise slot->dev (virtio_dev_init) and set slot->model.
	 * Returns 0 or -1 (logged). */
	int (*create)(struct virtio_slot *slot, struct vm *vm, const char *label);
	void (*destroy)(struct virtio_slot *slot);
	/* Optional: mark what the device needs from the host while the guest runs (system calls
	 * the seccomp filters must keep, vmm/seccomp.h), from its parsed options. */
	void (*seccomp_needs)(const void *parsed, struct seccomp_needs *needs);
};

#define MAX_DEVICE_KINDS 16

/* NULL-terminated. */
extern const struct device_kind_desc *const device_kinds[];

#endif
