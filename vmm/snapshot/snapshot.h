/* Snapshot and restore of a running VM (issue 21): what KVM holds (vCPUs, irqchip, PIT, clock),
 * the legacy devices' state, and guest memory, through snapshot_files.h. */
#ifndef MINIVMM_SNAPSHOT_H
#define MINIVMM_SNAPSHOT_H

#include <stddef.h>

#include "snapshot_files.h"
#include "snapshot_format.h"
#include "vmm/kvm/vm.h"

/* The PVM hypervisor's VIF page registration (../shared/PLATFORM.md): vCPU state too. */
#define PVM_MSR_VIF	   0x4b564d10u
#define PVM_MSR_FIRST	   0x4b564d10u
#define PVM_MSR_LAST	   0x4b564d1fu
#define PVM_VIF_HOST_WRITE 0x400ULL /* bit 10: a write from the VMM, not the guest */

/* The control socket's "snapshot": refuse what cannot be saved yet (virtio devices) and files
 * that are not new and empty (snapshot_check_files), pause every vCPU (they stay paused),
 * capture the state and write it into the client's files fds (snapshot_files.h). On the I/O
 * thread, which owns the devices. Returns 0, or -1 with a one-line reason in err (the VM is then
 * left as it was found, but paused if the pause succeeded). */
int snapshot_save(struct vm *vm, const int fds[SNAPSHOT_NR_FILES], char *err, size_t errlen);

/* --restore: check and load cfg->restore_dir and size the machine from it (cfg->memory_bytes,
 * nr_cpus, memory_fd: close it once the VM is created). Returns the state to apply (free it), or
 * NULL with the one-line reason logged (a damaged or foreign snapshot: exit status 2). */
struct snapshot_state *snapshot_restore_open(struct vm_config *cfg);

/* Give a VM whose vCPUs exist but have not run the saved state (irqchip, PIT, every vCPU, the
 * clock). Returns 0, or -1 with a one-line reason in err. */
int snapshot_apply(struct vm *vm, const struct snapshot_state *st, char *err, size_t errlen);

#endif
