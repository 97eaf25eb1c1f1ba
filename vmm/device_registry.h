/* Every kind of virtio device the command line can ask for. A new device is one entry in
 * device_registry.c plus its model in devices/ and its glue in vmm/kinds/: the core never names
 * device kinds, and device models know nothing of the VM (only struct device_env). */
#ifndef MINIVMM_DEVICE_REGISTRY_H
#define MINIVMM_DEVICE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

struct event_loop;
struct guest_mem;
struct option_desc;
struct option_list;
struct seccomp_needs;
struct virtio_slot;

/* What a device model gets of the VM: guest memory and the I/O thread's event loop. */
struct device_env {
	struct guest_mem *mem;
	struct event_loop *loop;
};

struct device_kind_desc {
	const char *flag;  /* "--rng" without the dashes */
	const char *label; /* device label prefix: "virtio-rng" */
	const char *help;  /* --help: what the device is ('\n' between lines) */
	/* Its own options (every kind also takes transport=), ended by {NULL}: they give parse
	 * its errors and --help its lines. */
	const struct option_desc *options;
	bool needs_options; /* the flag must have options (e.g. --net tap=NAME) */
	/* Validate the device's own options (the flag's list without transport=) into a malloc'd
	 * *parsed; return -1 with a one-line reason in err. Runs at command-line parsing, before
	 * any set-up. */
	int (*parse)(const struct option_list *opts, void **parsed, char *err, size_t errlen);
	/* Optional: release *parsed (default: free()). */
	void (*free_parsed)(void *parsed);
	/* Create the device model: initialise slot->dev (virtio_dev_init) and set slot->model.
	 * Returns 0 or -1 (logged). */
	int (*create)(struct virtio_slot *slot, const struct device_env *env, const char *label);
	void (*destroy)(struct virtio_slot *slot);
	/* Optional: mark what the device needs from the host while the guest runs (system calls
	 * the seccomp filters must keep, vmm/seccomp.h), from its parsed options. */
	void (*seccomp_needs)(const void *parsed, struct seccomp_needs *needs);
};

#define MAX_DEVICE_KINDS 16

/* NULL-terminated. */
extern const struct device_kind_desc *const device_kinds[];
const struct device_kind_desc *device_kind_find(const char *flag);
/* --help's lines for the kind, from its options table. */
void device_kind_usage(const struct device_kind_desc *kind);

#endif
