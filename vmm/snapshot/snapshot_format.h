/* The snapshot's machine state (state.bin, see docs/snapshots.md): what a paused VM is made of,
 * as records of KVM's own structures, and its strict parser (the file is hostile input). */
#ifndef MINIVMM_SNAPSHOT_FORMAT_H
#define MINIVMM_SNAPSHOT_FORMAT_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/cli/config.h"
#include "devices/serial.h"
#include "devices/virtio/mmio.h"
#include "devices/virtio/pci.h"
#include "devices/virtio/virtio.h"

#define SNAPSHOT_STATE_MAGIC "MVMSTATE"
/* More than any KVM's KVM_GET_MSR_INDEX_LIST has (about 100 on x86 today). */
#define SNAPSHOT_MAX_MSRS 512

/* Record tags (u32). Each record: tag, index (vCPU, or irqchip), payload length, payload. */
enum snapshot_tag {
	SNAP_CONFIG = 1,  /* struct snapshot_config; the first record */
	SNAP_CLOCK = 2,	  /* struct kvm_clock_data */
	SNAP_IRQCHIP = 3, /* struct kvm_irqchip, index = chip id (PIC master, slave, IOAPIC) */
	SNAP_PIT = 4,	  /* struct kvm_pit_state2 */
	SNAP_SERIAL = 5,  /* struct serial_state (COM1) */
	SNAP_DEVICE = 6,  /* struct snapshot_device, index = device (command-line order) */
	/* index = device: its kind's own state, laid out by the kind (device_snapshot_ops.save);
	 * optional, up to the state file's size */
	SNAP_DEVICE_STATE = 7,
	SNAP_REGS = 16, /* per vCPU from here on: index = vCPU */
	SNAP_SREGS = 17,
	SNAP_XSAVE = 18, /* the 4 KiB legacy KVM_GET_XSAVE area */
	SNAP_XCRS = 19,	 /* optional */
	SNAP_MSRS = 20,	 /* n struct kvm_msr_entry, index and value */
	SNAP_LAPIC = 21,
	SNAP_EVENTS = 22,
	SNAP_MP_STATE = 23,
	SNAP_DEBUGREGS = 24,
};

/* The machine the state belongs to. */
struct snapshot_config {
	uint64_t memory_bytes;
	uint32_t nr_cpus;
	uint32_t nr_devices; /* virtio devices, each a SNAP_DEVICE record */
};

#define SNAPSHOT_FLAG_MAX 16
#define SNAPSHOT_SPEC_MAX 1024

/* One virtio device: how to create it again, and its generic state (its kind's own is a
 * SNAP_DEVICE_STATE record). */
struct snapshot_device {
	char flag[SNAPSHOT_FLAG_MAX]; /* "rng": the command-line flag, NUL-terminated */
	char spec[SNAPSHOT_SPEC_MAX]; /* its options but the host ones, NUL-terminated */
	uint32_t transport;	      /* enum virtio_transport_kind */
	uint32_t pad;
	struct virtio_dev_state dev;
	struct virtio_mmio_state mmio; /* TRANSPORT_MMIO */
	struct virtio_pci_state pci;   /* TRANSPORT_PCI */
};

struct snapshot_vcpu {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_xsave xsave;
	struct kvm_xcrs xcrs;
	bool has_xcrs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events events;
	struct kvm_mp_state mp_state;
	struct kvm_debugregs debugregs;
	uint32_t nr_msrs;
	struct kvm_msr_entry msrs[SNAPSHOT_MAX_MSRS];
};

struct snapshot_state {
	struct snapshot_config config;
	struct kvm_clock_data clock;
	struct kvm_irqchip irqchip[3];
	struct kvm_pit_state2 pit;
	struct serial_state serial;
	struct snapshot_device devices[MAX_DEVICES]; /* config.nr_devices of them */
	/* A device's own state as its kind saved it: malloc'd, kind_state_len bytes (NULL, 0:
	 * none). */
	uint8_t *kind_state[MAX_DEVICES];
	uint32_t kind_state_len[MAX_DEVICES];
	struct snapshot_vcpu vcpus[MAX_VCPUS]; /* config.nr_cpus of them */
};

/* Free the kinds' states a state holds (and set them NULL); snapshot_state_free: and the
 * state. */
void snapshot_state_free_maps(struct snapshot_state *st);
void snapshot_state_free(struct snapshot_state *st);

/* Serialize st into a malloc'd buffer (*len bytes); NULL when out of memory. */
uint8_t *snapshot_state_write(const struct snapshot_state *st, size_t *len);
/* Parse buf strictly: the magic, the config first and in range, every record's length, index
 * and tag known, none twice, every required one present. A kind's own state is only checked to
 * belong to a device: its kind checks its content at the restore.
 * Returns 0 (st's kinds' states are then malloc'd: snapshot_state_free_maps), or -1 with a
 * one-line reason in err (st is then undefined, and holds none). */
int snapshot_state_parse(const uint8_t *buf, size_t len, struct snapshot_state *st, char *err,
			 size_t errlen);

/* Formats an error into err (errlen bytes) and returns -1, for `return snapshot_fail(...)`. */
int snapshot_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
