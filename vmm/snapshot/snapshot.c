#include "snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vmm/cli/cli.h"
#include "vmm/kinds/device_registry.h"
#include "vmm/cli/options.h"
#include "snapshot_files.h"
#include "vmm/kvm/vcpu.h"
#include "vmm/kvm/virtio_devices.h"
#include "base/log.h"

#define PAUSE_WAIT_MS	 1000
#define MSR_TSC_DEADLINE 0x6e0

#define IOCTL_OR_FAIL(fd, req, arg, what, idx)                                                     \
	do {                                                                                       \
		if (ioctl(fd, req, arg) < 0)                                                       \
			return snapshot_fail(err, errlen, "%s (vCPU %d): %s", what, idx,           \
					     strerror(errno));                                     \
	} while (0)

/* Every MSR KVM lists, and the PVM range: those this KVM can read are saved. */
static int msr_candidates(int kvm_fd, uint32_t *out, uint32_t max, uint32_t *n)
{
	struct kvm_msr_list *list = calloc(1, sizeof(*list) + max * sizeof(uint32_t));
	if (!list)
		return -1;
	list->nmsrs = max - (PVM_MSR_LAST - PVM_MSR_FIRST + 1);
	if (ioctl(kvm_fd, KVM_GET_MSR_INDEX_LIST, list) < 0) {
		free(list);
		return -1;
	}
	*n = 0;
	for (uint32_t i = 0; i < list->nmsrs; i++)
		if (list->indices[i] < PVM_MSR_FIRST || list->indices[i] > PVM_MSR_LAST)
			out[(*n)++] = list->indices[i];
	for (uint32_t m = PVM_MSR_FIRST; m <= PVM_MSR_LAST; m++)
		out[(*n)++] = m;
	free(list);
	return 0;
}

static int capture_msrs(int fd, const uint32_t *idx, uint32_t n, struct snapshot_vcpu *v)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} one;
	v->nr_msrs = 0;
	for (uint32_t i = 0; i < n && v->nr_msrs < SNAPSHOT_MAX_MSRS; i++) {
		memset(&one, 0, sizeof(one));
		one.hdr.nmsrs = 1;
		one.e.index = idx[i];
		if (ioctl(fd, KVM_GET_MSRS, &one) == 1)
			v->msrs[v->nr_msrs++] = one.e;
	}
	return 0;
}

static int capture_vcpu(struct vcpu *vc, const uint32_t *msr_idx, uint32_t nr_msr_idx,
			struct snapshot_vcpu *v, char *err, size_t errlen)
{
	int fd = vc->fd, i = vc->index;
	IOCTL_OR_FAIL(fd, KVM_GET_REGS, &v->regs, "KVM_GET_REGS", i);
	IOCTL_OR_FAIL(fd, KVM_GET_SREGS, &v->sregs, "KVM_GET_SREGS", i);
	IOCTL_OR_FAIL(fd, KVM_GET_XSAVE, &v->xsave, "KVM_GET_XSAVE", i);
	v->has_xcrs = ioctl(fd, KVM_GET_XCRS, &v->xcrs) == 0;
	IOCTL_OR_FAIL(fd, KVM_GET_LAPIC, &v->lapic, "KVM_GET_LAPIC", i);
	IOCTL_OR_FAIL(fd, KVM_GET_VCPU_EVENTS, &v->events, "KVM_GET_VCPU_EVENTS", i);
	IOCTL_OR_FAIL(fd, KVM_GET_MP_STATE, &v->mp_state, "KVM_GET_MP_STATE", i);
	IOCTL_OR_FAIL(fd, KVM_GET_DEBUGREGS, &v->debugregs, "KVM_GET_DEBUGREGS", i);
	return capture_msrs(fd, msr_idx, nr_msr_idx, v);
}

/* Asks every device's kind to finish its work in flight; fails when one cannot be saved now
 * (a disk holding requests it may not hand over yet). */
static int quiesce_devices(struct vm *vm, char *err, size_t errlen)
{
	for (int i = 0; vm->virtio && i < vm->virtio->nr; i++) {
		struct virtio_slot *slot = &vm->virtio->slots[i];
		const struct device_snapshot_ops *ops = slot->cfg->kind->snapshot;
		char why[200];
		if (ops->quiesce && ops->quiesce(slot, why, sizeof(why)))
			return snapshot_fail(err, errlen, "snapshot: %s", why);
	}
	return 0;
}

/* A device's options without those naming host resources: a snapshot holds none (a restore
 * takes them from its own --backend), so the file carries no authority over the host. */
static int save_spec(const struct device_config *cfg, struct snapshot_device *d, char *err,
		     size_t errlen)
{
	const char *flag = cfg->kind->flag;
	char host[SNAPSHOT_SPEC_MAX];
	if (strlen(flag) >= sizeof(d->flag))
		return snapshot_fail(err, errlen, "snapshot: --%s: flag too long to save", flag);
	memcpy(d->flag, flag, strlen(flag) + 1);
	if (device_spec_split(cfg->kind, cfg->spec ? cfg->spec : "", d->spec, host, sizeof(d->spec),
			      err, errlen))
		return -1;
	return 0;
}

static int capture_devices(struct vm *vm, struct snapshot_state *st, char *err, size_t errlen)
{
	const struct virtio_devices *devs = vm->virtio;
	st->config.nr_devices = devs ? (uint32_t)devs->nr : 0;
	for (uint32_t i = 0; i < st->config.nr_devices; i++) {
		struct virtio_slot *slot = (struct virtio_slot *)&devs->slots[i];
		struct snapshot_device *d = &st->devices[i];
		if (save_spec(slot->cfg, d, err, errlen))
			return -1;
		d->transport = slot->cfg->transport;
		const struct device_snapshot_ops *ops = slot->cfg->kind->snapshot;
		size_t len = 0;
		if (ops->save && ops->save(slot, &st->kind_state[i], &len))
			return snapshot_fail(err, errlen, "snapshot: out of memory");
		if (len > UINT32_MAX)
			return snapshot_fail(err, errlen, "snapshot: %s: its state is too large",
					     slot->dev.label);
		st->kind_state_len[i] = (uint32_t)len;
		virtio_dev_save(&slot->dev, &d->dev);
		if (slot->cfg->transport == TRANSPORT_MMIO)
			virtio_mmio_save(&slot->mmio, &d->mmio);
		else
			virtio_pci_save(slot->pci, &d->pci);
	}
	return 0;
}

static int capture(struct vm *vm, struct snapshot_state *st, char *err, size_t errlen)
{
	st->config = (struct snapshot_config){.memory_bytes = vm->mem.ram_size,
					      .nr_cpus = (uint32_t)vm->nr_vcpus};
	for (uint32_t c = 0; c < 3; c++) {
		st->irqchip[c].chip_id = c;
		if (ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &st->irqchip[c]) < 0)
			return snapshot_fail(err, errlen, "KVM_GET_IRQCHIP %u: %s", c,
					     strerror(errno));
	}
	if (ioctl(vm->vm_fd, KVM_GET_PIT2, &st->pit) < 0)
		return snapshot_fail(err, errlen, "KVM_GET_PIT2: %s", strerror(errno));
	static uint32_t msr_idx[SNAPSHOT_MAX_MSRS];
	uint32_t nr_msr_idx;
	if (msr_candidates(vm->kvm_fd, msr_idx, SNAPSHOT_MAX_MSRS, &nr_msr_idx))
		return snapshot_fail(err, errlen, "KVM_GET_MSR_INDEX_LIST: %s", strerror(errno));
	for (int i = 0; i < vm->nr_vcpus; i++)
		if (capture_vcpu(&vm->vcpus[i], msr_idx, nr_msr_idx, &st->vcpus[i], err, errlen))
			return -1;
	if (vm->serial)
		serial_save(vm->serial, &st->serial);
	if (capture_devices(vm, st, err, errlen))
		return -1;
	/* Last: the clock stands still from here until the restore sets it. */
	if (ioctl(vm->vm_fd, KVM_GET_CLOCK, &st->clock) < 0)
		return snapshot_fail(err, errlen, "KVM_GET_CLOCK: %s", strerror(errno));
	return 0;
}

int snapshot_save(struct vm *vm, const int fds[SNAPSHOT_NR_FILES], char *err, size_t errlen)
{
	/* Devices whose kind cannot be saved would come back broken: refuse before pausing. */
	for (int i = 0; i < vm->cfg->nr_devices; i++) {
		const struct device_config *d = &vm->cfg->devices[i];
		char why[200];
		if (!d->kind->snapshot)
			return snapshot_fail(
			    err, errlen, "snapshot: --%s devices cannot be saved by this version",
			    d->kind->flag);
		if (d->kind->snapshot->savable &&
		    d->kind->snapshot->savable(d->parsed, why, sizeof(why)))
			return snapshot_fail(err, errlen, "snapshot: device %d (--%s): %s", i,
					     d->kind->flag, why);
	}
	if (snapshot_check_files(fds, err, errlen))
		return -1;
	int n = vcpus_pause(vm, PAUSE_WAIT_MS);
	if (n < vm->nr_vcpus) {
		vcpus_resume(vm); /* all or nothing, as the socket's pause */
		return snapshot_fail(err, errlen, "snapshot: only %d of %d vCPUs paused in time", n,
				     vm->nr_vcpus);
	}
	/* Before anything is read: completions write guest memory and raise interrupts. */
	if (quiesce_devices(vm, err, errlen))
		return -1;
	struct snapshot_state *st = calloc(1, sizeof(*st));
	if (!st)
		return snapshot_fail(err, errlen, "snapshot: out of memory");
	int rc =
	    capture(vm, st, err, errlen) || snapshot_write_files(fds, st, &vm->mem, err, errlen);
	snapshot_state_free(st);
	return rc ? -1 : 0;
}

/* MSRs one by one, so a refusal names its MSR. The PVM registration is written as the VMM's
 * (bit 10), without its enable bit 0 (PLATFORM.md); the PVM range's read-only information MSRs
 * may refuse a write and need none. */
static int apply_msrs(int fd, int index, const struct snapshot_vcpu *v, char *err, size_t errlen)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} one;
	for (uint32_t i = 0; i < v->nr_msrs; i++) {
		memset(&one, 0, sizeof(one));
		one.hdr.nmsrs = 1;
		one.e.index = v->msrs[i].index;
		one.e.data = v->msrs[i].data;
		bool pvm = one.e.index >= PVM_MSR_FIRST && one.e.index <= PVM_MSR_LAST;
		if (one.e.index == PVM_MSR_VIF) {
			if (!one.e.data)
				continue; /* not registered: the vCPU runs emulated */
			one.e.data = (one.e.data & ~1ULL) | PVM_VIF_HOST_WRITE;
		}
		if (ioctl(fd, KVM_SET_MSRS, &one) != 1 && (!pvm || one.e.index == PVM_MSR_VIF))
			return snapshot_fail(err, errlen,
					     "vCPU %d: KVM_SET_MSRS refused MSR 0x%x = 0x%llx",
					     index, one.e.index, (unsigned long long)one.e.data);
	}
	return 0;
}

static int apply_vcpu(struct vcpu *vc, const struct snapshot_vcpu *v, char *err, size_t errlen)
{
	int fd = vc->fd, i = vc->index;
	/* QEMU's order: the LAPIC after the MP state, the events after the LAPIC. */
	IOCTL_OR_FAIL(fd, KVM_SET_SREGS, &v->sregs, "KVM_SET_SREGS", i);
	IOCTL_OR_FAIL(fd, KVM_SET_REGS, &v->regs, "KVM_SET_REGS", i);
	IOCTL_OR_FAIL(fd, KVM_SET_XSAVE, &v->xsave, "KVM_SET_XSAVE", i);
	if (v->has_xcrs)
		IOCTL_OR_FAIL(fd, KVM_SET_XCRS, &v->xcrs, "KVM_SET_XCRS", i);
	if (apply_msrs(fd, i, v, err, errlen))
		return -1;
	IOCTL_OR_FAIL(fd, KVM_SET_MP_STATE, &v->mp_state, "KVM_SET_MP_STATE", i);
	IOCTL_OR_FAIL(fd, KVM_SET_LAPIC, &v->lapic, "KVM_SET_LAPIC", i);
	/* The TSC deadline counts only once the LAPIC timer is in TSC-deadline mode: again. */
	for (uint32_t m = 0; m < v->nr_msrs; m++)
		if (v->msrs[m].index == MSR_TSC_DEADLINE) {
			struct {
				struct kvm_msrs hdr;
				struct kvm_msr_entry e;
			} one = {.hdr.nmsrs = 1, .e = v->msrs[m]};
			ioctl(fd, KVM_SET_MSRS, &one);
		}
	IOCTL_OR_FAIL(fd, KVM_SET_VCPU_EVENTS, &v->events, "KVM_SET_VCPU_EVENTS", i);
	IOCTL_OR_FAIL(fd, KVM_SET_DEBUGREGS, &v->debugregs, "KVM_SET_DEBUGREGS", i);
	return 0;
}

/* A device's own state, by its kind, once its transport is set up again. */
static int apply_model(struct virtio_slot *slot, const struct snapshot_state *st, int i, char *err,
		       size_t errlen)
{
	const struct device_snapshot_ops *ops = slot->cfg->kind->snapshot;
	char why[200];
	if (ops->restore &&
	    ops->restore(slot, st->kind_state[i], st->kind_state_len[i], why, sizeof(why)))
		return snapshot_fail(err, errlen, "device %d (--%s %s): %s", i,
				     slot->cfg->kind->flag, st->devices[i].spec, why);
	return 0;
}

/* Interrupts the device models raise again once the irqchip is back (see snapshot_apply). */
static void resignal_models(struct vm *vm)
{
	for (int i = 0; i < vm->virtio->nr; i++) {
		struct virtio_slot *slot = &vm->virtio->slots[i];
		if (slot->cfg->kind->snapshot->resignal)
			slot->cfg->kind->snapshot->resignal(slot);
	}
}

int snapshot_apply(struct vm *vm, const struct snapshot_state *st, char *err, size_t errlen)
{
	int nr_devs = vm->virtio ? vm->virtio->nr : 0;
	if ((int)st->config.nr_cpus != vm->nr_vcpus ||
	    st->config.memory_bytes != vm->mem.ram_size || (int)st->config.nr_devices != nr_devs)
		return snapshot_fail(err, errlen,
				     "the VM does not match the snapshot's configuration");
	/* The devices first: replaying their set-up may drive INTx lines, which the saved
	 * irqchip state then overrides. */
	for (int i = 0; i < nr_devs; i++) {
		struct virtio_slot *slot = &vm->virtio->slots[i];
		const struct snapshot_device *d = &st->devices[i];
		if (slot->cfg->transport != (enum virtio_transport_kind)d->transport)
			return snapshot_fail(err, errlen, "device %d: the transport differs", i);
		if (!slot->cfg->kind->snapshot->restore && st->kind_state[i])
			return snapshot_fail(err, errlen,
					     "device %d: a --%s keeps no state of its own", i,
					     slot->cfg->kind->flag);
		/* A backend may offer less than the saved one (a tap without offloads): the driver
		 * would find features it had accepted gone, and the replay would break the device.
		 * (Before FEATURES_OK the driver may have written anything: the replay refuses it
		 * as the device did.) */
		if ((d->dev.status & VIRTIO_STATUS_FEATURES_OK) &&
		    (d->dev.driver_features & ~slot->dev.device_features))
			return snapshot_fail(
			    err, errlen,
			    "device %d (--%s %s): the driver's features 0x%llx are not all "
			    "offered here (0x%llx)",
			    i, d->flag, d->spec, (unsigned long long)d->dev.driver_features,
			    (unsigned long long)slot->dev.device_features);
		if (slot->cfg->transport == TRANSPORT_MMIO)
			virtio_mmio_restore(&slot->mmio, &d->dev, &d->mmio);
		else
			virtio_pci_restore(slot->pci, &d->dev, &d->pci);
		if (apply_model(slot, st, i, err, errlen))
			return -1;
	}
	for (int c = 0; c < 3; c++) {
		struct kvm_irqchip chip = st->irqchip[c];
		chip.chip_id = (uint32_t)c;
		if (ioctl(vm->vm_fd, KVM_SET_IRQCHIP, &chip) < 0)
			return snapshot_fail(err, errlen, "KVM_SET_IRQCHIP %d: %s", c,
					     strerror(errno));
	}
	if (ioctl(vm->vm_fd, KVM_SET_PIT2, &st->pit) < 0)
		return snapshot_fail(err, errlen, "KVM_SET_PIT2: %s", strerror(errno));
	for (int i = 0; i < vm->nr_vcpus; i++)
		if (apply_vcpu(&vm->vcpus[i], &st->vcpus[i], err, errlen))
			return -1;
	if (vm->serial && serial_restore(vm->serial, &st->serial))
		return snapshot_fail(err, errlen, "the serial port's saved state is invalid");
	struct kvm_clock_data clock = {.clock = st->clock.clock};
	if (ioctl(vm->vm_fd, KVM_SET_CLOCK, &clock) < 0)
		return snapshot_fail(err, errlen, "KVM_SET_CLOCK: %s", strerror(errno));
	/* An interrupt raised just before the save may not have reached the saved LAPIC (irqfds
	 * inject asynchronously): raise one on every live queue now that it is restored. A
	 * spurious used-buffer interrupt is harmless; a lost one can stall a driver. */
	for (int i = 0; i < nr_devs; i++) {
		struct virtio_dev *dev = &vm->virtio->slots[i].dev;
		for (int q = 0; q < dev->nr_queues; q++)
			if (dev->vqs[q].avail && !dev->broken)
				dev->transport->signal_queue(dev, q);
	}
	if (nr_devs)
		resignal_models(vm);
	return 0;
}

/* A saved device's options joined with the host options its --backend gives (written back
 * into d->spec, which the restored VM's device config points to). Refused: host options in the
 * snapshot (only a crafted file has them), a --backend option that is not a host one, a kind
 * with host options and no --backend, a --backend for a kind without. */
static int join_backend(struct snapshot_device *d, const struct device_kind_desc *kind, uint32_t i,
			const char *backend, char *err, size_t errlen)
{
	char guest[SNAPSHOT_SPEC_MAX], host[SNAPSHOT_SPEC_MAX], keys[128];
	struct option_list given;
	device_kind_host_keys(kind, keys, sizeof(keys));
	if (device_spec_split(kind, d->spec, guest, host, sizeof(guest), err, errlen))
		return -1;
	if (host[0])
		return snapshot_fail(err, errlen,
				     "device %u (--%s): the snapshot names host resources (%s): a "
				     "snapshot may not; give them with --backend %u:OPTIONS",
				     i, d->flag, host, i);
	if (!backend && keys[0])
		return snapshot_fail(err, errlen,
				     "device %u is a --%s: give what it uses on the host with "
				     "--backend %u:OPTIONS (%s; a snapshot names none)",
				     i, d->flag, i, keys);
	if (backend && !keys[0])
		return snapshot_fail(err, errlen,
				     "--backend %u: device %u is a --%s, which uses nothing on the "
				     "host",
				     i, i, d->flag);
	if (!backend)
		return 0;
	if (device_spec_split(kind, backend, guest, host, sizeof(guest), err, errlen) ||
	    options_split(guest, "--backend", &given, err, errlen))
		return -1;
	if (given.n)
		return snapshot_fail(err, errlen,
				     "--backend %u: '%s' is not a host option of a --%s (%s); the "
				     "rest comes from the snapshot",
				     i, given.kv[0].key, d->flag, keys);
	size_t saved = strlen(d->spec);
	if (saved + 1 + strlen(host) >= sizeof(d->spec))
		return snapshot_fail(err, errlen, "--backend %u: the options get too long", i);
	if (saved)
		d->spec[saved++] = ',';
	memcpy(d->spec + saved, host, strlen(host) + 1);
	return 0;
}

/* Nothing of a refused restore stays open (the caller logged why). */
static struct snapshot_state *refuse(struct vm_config *cfg, struct snapshot_state *st)
{
	close(cfg->memory_fd);
	snapshot_state_free(st);
	return NULL;
}

struct snapshot_state *snapshot_restore_open(struct vm_config *cfg)
{
	struct snapshot_state *st;
	char err[512];
	if (snapshot_open_dir(cfg->restore_dir, &st, &cfg->memory_fd, err, sizeof(err))) {
		log_error("cannot restore: %s", err);
		return NULL;
	}
	cfg->memory_bytes = st->config.memory_bytes;
	cfg->nr_cpus = (int)st->config.nr_cpus;
	for (uint32_t i = st->config.nr_devices; i < MAX_DEVICES; i++)
		if (cfg->backend[i]) {
			log_error("cannot restore: --backend %u: the snapshot has %u devices", i,
				  st->config.nr_devices);
			return refuse(cfg, st);
		}
	/* The devices as the command line gave them, in the same order: same windows, slots. */
	for (uint32_t i = 0; i < st->config.nr_devices; i++) {
		struct snapshot_device *d = &st->devices[i];
		const struct device_kind_desc *kind = device_kind_find(d->flag);
		if (!kind || !kind->snapshot) {
			/* Only what snapshot_save writes: a crafted file gets no other kind. */
			log_error(
			    "cannot restore: device %u: --%s devices are not restored by this "
			    "version",
			    i, d->flag);
			return refuse(cfg, st);
		}
		if (join_backend(d, kind, i, cfg->backend[i], err, sizeof(err))) {
			log_error("cannot restore: %s", err);
			return refuse(cfg, st);
		}
		if (cli_add_device(cfg, d->flag, d->spec, err, sizeof(err)) ||
		    cfg->devices[i].transport != (enum virtio_transport_kind)d->transport) {
			log_error("cannot restore: device %u (--%s %s): %s", i, d->flag, d->spec,
				  cfg->nr_devices > (int)i ? "transport differs" : err);
			return refuse(cfg, st);
		}
		/* What the host side offers against the saved state, before anything is built. */
		if (kind->snapshot->check &&
		    kind->snapshot->check(cfg->devices[i].parsed, st->kind_state[i],
					  st->kind_state_len[i], err, sizeof(err))) {
			log_error("cannot restore: device %u (--%s %s): %s", i, d->flag, d->spec,
				  err);
			return refuse(cfg, st);
		}
	}
	return st;
}
