/* What the command line asked for: plain data, validated by cli.c. */
#ifndef MINIVMM_CONFIG_H
#define MINIVMM_CONFIG_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch/x86/boot.h"

#define MAX_VCPUS   64
#define MAX_DEVICES 16
/* --console file=PATH without max-size: a guest must not fill the host's disk. */
#define CONSOLE_FILE_DEFAULT_MAX (64ULL << 20)

enum virtio_transport_kind { TRANSPORT_PCI, TRANSPORT_MMIO };

struct device_kind_desc;

/* One virtio device asked for on the command line. */
struct device_config {
	const struct device_kind_desc *kind;
	enum virtio_transport_kind transport;
	void *parsed;	  /* the device's own options, from kind->parse */
	const char *spec; /* the options as given ("transport=mmio"), for a snapshot */
};

#define JAIL_DIR_MAX 256

/* --jail: chroot and unprivileged ids once the VM is set up (vmm/sandbox/jail.h). */
struct jail_config {
	bool enabled;
	char dir[JAIL_DIR_MAX];
	uid_t uid;
	gid_t gid;
};

/* Named ports of the virtio console beyond hvc0 (vmm/cli/vport.h): six, what the device's
 * queues leave (VIRTIO_CONSOLE_MAX_PORTS). */
#define MAX_VPORTS     6
#define VPORT_NAME_MAX 32

struct vport_config {
	char
	    name[VPORT_NAME_MAX]; /* what the guest sees in /sys/class/virtio-ports/vportNpM/name */
	int out_fd;		  /* the guest's writes go here; -1: dropped */
	uint64_t out_max;	  /* out_fd takes this many bytes at most; 0: no cap */
	int in_fd;		  /* read, and given to the guest; -1: no input */
	bool owns_out;		  /* out_fd is a file --vport opened (cli_free_config closes it) */
};

enum console_kind { CONSOLE_STDIO, CONSOLE_NONE, CONSOLE_FILE };
/* What reaches the console's output (vmm/cli/console_filter.h); auto: filtered on a terminal. */
enum console_filter_mode { CONSOLE_FILTER_AUTO, CONSOLE_FILTER_ON, CONSOLE_FILTER_OFF };

struct vm_config {
	const char *kernel_path;
	const char *initrd_path;
	const char *cmdline;
	enum boot_protocol protocol;
	uint64_t memory_bytes;
	int nr_cpus;
	bool populate;
	bool seccomp; /* run under the system-call allow-list (vmm/sandbox/seccomp.c) */
	bool quiet;
	bool timing; /* --timing: report the start-up steps (base/startup_timing.h) */
	enum console_kind console;
	bool console_virtio; /* --console virtio: a virtio console device is in devices[] */
	/* stdio,filter=on|off */
	enum console_filter_mode console_filter;
	const char *console_path; /* file=: console_path_len bytes (not NUL-terminated) */
	size_t console_path_len;
	uint64_t console_max_bytes; /* file=PATH: output past this is dropped; 0: no cap */
	const char *dump_dtb_path;  /* --dump-dtb */
	bool pass_dtb;		    /* --dtb: hand the tree to the guest */
	const char *api_sock_path;  /* --api-sock: the control socket */
	const char *virtiofsd_path; /* --virtiofsd: what --share starts; NULL: looked for */
	const char *restore_dir;    /* --restore: rebuild the VM from this snapshot */
	int memory_fd;		    /* with restore_dir: guest RAM is this file, MAP_PRIVATE */
	bool start_paused;	    /* --paused: the vCPUs wait for "resume" */
	/* --backend INDEX:SPEC: with restore_dir, device INDEX's host options (option_desc.host:
	 * a --disk's path=, a --net's tap= or user), which a snapshot never holds; NULL: none. */
	const char *backend[MAX_DEVICES];
	struct jail_config jail;
	struct device_config devices[MAX_DEVICES];
	int nr_devices;
	struct vport_config vports[MAX_VPORTS]; /* --vport, or vport_add */
	int nr_vports;
	bool io_pinned;
	cpu_set_t io_pin_set;
	/* pinned[i] says whether vCPU i has a host CPU set in pin_sets[i]. */
	bool pinned[MAX_VCPUS];
	cpu_set_t pin_sets[MAX_VCPUS];
};

#endif
