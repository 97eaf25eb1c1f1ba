/* vCPU threads: one per vCPU, pinned before the first KVM_RUN. */
#ifndef MINIVMM_VCPU_H
#define MINIVMM_VCPU_H

#include "vm.h"

/* Create every vCPU fd and its per-vCPU state; the boot vCPU gets entry's registers (none when
 * entry is NULL: a restore sets them). */
int vcpus_create(struct vm *vm, const struct boot_entry *entry);
/* Start the threads, wait until each has applied its pinning, print the thread table, then
 * let them run. Returns 0 or -1 (logged). */
int vcpus_start(struct vm *vm);
/* Ask every vCPU to leave KVM_RUN and park until vcpus_resume; waits up to timeout_ms for them
 * to park. Returns the number of vCPUs parked. Callable from any thread but a vCPU's. */
int vcpus_pause(struct vm *vm, unsigned timeout_ms);
void vcpus_resume(struct vm *vm);
/* Is vCPU i parked? */
bool vcpu_is_paused(struct vm *vm, int i);
/* The class a KVM_RUN exit reason is counted under. */
enum vcpu_exit_class vcpu_exit_class(uint32_t exit_reason);
/* Count one exit of vCPU v (its own thread only). */
void vcpu_count_exit(struct vcpu *v, uint32_t exit_reason);
/* vCPU v's exits of class c so far (any thread; racy by a few exits). */
uint64_t vcpu_exits(const struct vcpu *v, enum vcpu_exit_class c);
/* Kick every vCPU out of KVM_RUN and join the threads (paused ones too). */
void vcpus_stop(struct vm *vm);

#endif
