/* Every kind of virtio device the command line can ask for. A new device is one entry in
 * device_registry.c plus its model in devices/ and its glue in vmm/kinds/: the core never names
 * device kinds, and device models know nothing of the VM (only struct device_env). */
#ifndef MINIVMM_DEVICE_REGISTRY_H
#define MINIVMM_DEVICE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct console;
struct event_loop;
struct guest_mem;
struct json_object;
struct json_writer;
struct option_desc;
struct option_list;
struct seccomp_needs;
struct virtio_slot;
struct vport_config;

/* What a device model gets of the VM: guest memory and the I/O thread's event loop (and, for
 * its control commands, the size of guest RAM; for a virtio console, the host's console). */
struct device_env {
	struct guest_mem *mem;
	struct event_loop *loop;
	uint64_t ram_bytes;
	struct console *console;
	const char *virtiofsd; /* --virtiofsd PATH, or NULL */
	/* The virtio console's named ports beyond hvc0 (vmm/cli/vport.h). */
	const struct vport_config *vports;
	int nr_vports;
};

/* A control-socket command a kind serves (vmm/api/api.h): {"cmd":"<name>"[,"<member>":...]}. */
struct device_command {
	const char *name;   /* "balloon-set" */
	const char *member; /* the one request member it takes besides "cmd", or NULL */
	/* The malloc'd reply line (api_ok_response, api_error_response). slot: the VM's first
	 * device of this kind, or NULL when it has none. I/O thread. */
	char *(*run)(struct virtio_slot *slot, const struct device_env *env,
		     const struct json_object *req);
};

/* How a device of a kind is saved into a snapshot and restored (vmm/snapshot/snapshot.c), beyond
 * the generic virtio and transport state the core saves for every device. Each hook is optional;
 * the snapshot core names no kind. */
struct device_snapshot_ops {
	/* Optional, before the vCPUs are paused: can a device so configured be saved at all (a
	 * disk whose back end is another process's cannot)? -1 with a one-line reason in err. */
	int (*savable)(const void *parsed, char *err, size_t errlen);
	/* With the vCPUs paused, before anything is read (I/O thread): finish or hand over the
	 * work in flight (completions write guest memory and raise interrupts). -1 with a
	 * one-line reason in err: the device cannot be saved now. */
	int (*quiesce)(struct virtio_slot *slot, char *err, size_t errlen);
	/* The kind's own state: a malloc'd *buf of *len bytes (the kind's to lay out). -1: out of
	 * memory. */
	int (*save)(struct virtio_slot *slot, uint8_t **buf, size_t *len);
	/* Before anything is built (the device's options parsed, what it uses on the host open):
	 * does what save wrote fit a device so configured (a disk image of the saved size)? -1
	 * with a one-line reason in err; restore checks again. */
	int (*check)(const void *parsed, const uint8_t *buf, size_t len, char *err, size_t errlen);
	/* Once the transport's state is replayed: check what save wrote (hostile input: any
	 * length, any bytes; buf NULL and len 0 when the snapshot holds none) and apply it.
	 * -1 with a one-line reason in err. */
	int (*restore)(struct virtio_slot *slot, const uint8_t *buf, size_t len, char *err,
		       size_t errlen);
	/* Once the interrupt controllers are restored: raise again what the guest must be told
	 * (an interrupt raised just before the save may be lost). */
	void (*resignal)(struct virtio_slot *slot);
};

struct device_kind_desc {
	const char *flag;  /* "--rng" without the dashes */
	const char *label; /* device label prefix: "virtio-rng" */
	const char *help;  /* --help: what the device is ('\n' between lines) */
	/* Its own options (every kind also takes transport=), ended by {NULL}: they give parse
	 * its errors and --help its lines. */
	const struct option_desc *options;
	bool needs_options; /* the flag must have options (e.g. --net tap=NAME) */
	/* Optional: "key=" a first option without '=' is the value of ("--share DIR,..."). */
	const char *positional;
	/* Another process maps the guest's RAM (a vhost-user back end): RAM is a shared memfd. */
	bool shares_memory;
	/* Optional: the same for one device, from its parsed options (a --disk on vhost-user=). */
	bool (*shares_memory_of)(const void *parsed);
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
	 * the seccomp filters must keep, vmm/sandbox/seccomp.h), from its parsed options. */
	void (*seccomp_needs)(const void *parsed, struct seccomp_needs *needs);
	/* Optional: members of the control socket's status reply ("balloon": {...}) for the VM's
	 * first device of this kind. I/O thread. */
	void (*status)(struct virtio_slot *slot, struct json_writer *w);
	/* Optional: the control-socket commands it serves, ended by {NULL}. */
	const struct device_command *commands;
	/* Optional: how its devices are saved and restored; NULL: a VM with one cannot be
	 * saved. */
	const struct device_snapshot_ops *snapshot;
};

#define MAX_DEVICE_KINDS 16

/* NULL-terminated. */
extern const struct device_kind_desc *const device_kinds[];
/* --help's lines for the kind, from its options table. */
void device_kind_usage(const struct device_kind_desc *kind);
/* The kind named by its flag ("disk"), or NULL. */
const struct device_kind_desc *device_kind_find(const char *flag);
/* A device's options (spec, as the command line gave them) split into those that name host
 * resources (option_desc.host: what a snapshot never saves) and the rest, transport= and keys
 * the kind does not know included; each part re-joined as "k=v,k" into its own len bytes.
 * Returns 0, or -1 with a one-line reason in err (a malformed spec, a part too long). */
int device_spec_split(const struct device_kind_desc *kind, const char *spec, char *guest,
		      char *host, size_t len, char *err, size_t errlen);
/* The kind's host options for messages ("path=, readonly=, cache="); "" when it has none. */
void device_kind_host_keys(const struct device_kind_desc *kind, char *out, size_t len);

#endif
