#include "vcpu.h"

#include <errno.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch/x86/cpu.h"
#include "vmm/cli/cli.h"
#include "vmm/sandbox/seccomp.h"
#include "base/log.h"
#include "base/startup_timing.h"

/* Signal used to kick a vCPU thread out of KVM_RUN; its handler does nothing. */
#define SIG_VCPU_KICK SIGUSR1

int vcpus_create(struct vm *vm, const struct boot_entry *entry)
{
	pthread_mutex_init(&vm->pause_lock, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&vm->pause_cond, &attr);
	pthread_condattr_destroy(&attr);
	for (int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		v->vm = vm;
		v->index = i;
		v->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, i);
		if (v->fd < 0) {
			log_error("KVM_CREATE_VCPU %d: %s", i, strerror(errno));
			return -1;
		}
		v->run = mmap(NULL, (size_t)vm->vcpu_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      v->fd, 0);
		if (v->run == MAP_FAILED) {
			v->run = NULL;
			log_error("mmap of vCPU %d state: %s", i, strerror(errno));
			return -1;
		}
		if (x86_vcpu_init(host_cpuid_get(&vm->host_cpuid, vm->kvm_fd), v->fd, i,
				  vm->nr_vcpus))
			return -1;
		/* Application processors wait in KVM for INIT/SIPI from the boot vCPU. No entry: a
		 * restore sets every register from the snapshot. */
		if (i == 0 && entry && x86_vcpu_set_boot_regs(v->fd, entry))
			return -1;
	}
	startup_mark(STARTUP_VCPUS);
	return 0;
}

static void handle_io(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;
	/* String I/O (rep outsb) arrives as count back-to-back elements. */
	for (uint32_t i = 0; i < run->io.count; i++) {
		io_bus_access(&v->vm->pio, run->io.port, data, run->io.size, is_write);
		data += run->io.size;
	}
}

static void handle_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint32_t len = run->mmio.len <= 8 ? run->mmio.len : 8;
	io_bus_access(&v->vm->mmio, run->mmio.phys_addr, run->mmio.data, len, run->mmio.is_write);
}

static void report_internal_error(struct vcpu *v, const char *what)
{
	log_error("vCPU %d: %s", v->index, what);
	x86_vcpu_dump(v->fd, &v->vm->mem);
	vm_request_stop(v->vm, EXIT_INTERNAL_ERROR);
}

enum vcpu_exit_class vcpu_exit_class(uint32_t exit_reason)
{
	switch (exit_reason) {
	case KVM_EXIT_IO:
		return VCPU_EXIT_IO;
	case KVM_EXIT_MMIO:
		return VCPU_EXIT_MMIO;
	case KVM_EXIT_HLT:
		return VCPU_EXIT_HLT;
	default:
		return VCPU_EXIT_OTHER;
	}
}

void vcpu_count_exit(struct vcpu *v, uint32_t exit_reason)
{
	/* One writer: a relaxed load and store, no locked instruction on the exit path. */
	uint64_t *c = &v->exits[vcpu_exit_class(exit_reason)];
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

uint64_t vcpu_exits(const struct vcpu *v, enum vcpu_exit_class c)
{
	return __atomic_load_n(&v->exits[c], __ATOMIC_RELAXED);
}

/* Returns false when the thread should stop. */
static bool handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	char what[128];
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		handle_io(v);
		return true;
	case KVM_EXIT_MMIO:
		handle_mmio(v);
		return true;
	case KVM_EXIT_INTR:
		return true;
	case KVM_EXIT_HLT:
		/* Only without an in-kernel LAPIC; treat as the guest being done. */
		log_info("vCPU %d halted", v->index);
		vm_request_stop(v->vm, EXIT_GUEST_RESET);
		return false;
	case KVM_EXIT_SHUTDOWN:
		log_error("vCPU %d: triple fault (KVM_EXIT_SHUTDOWN)", v->index);
		x86_vcpu_dump(v->fd, &v->vm->mem);
		vm_request_stop(v->vm, EXIT_TRIPLE_FAULT);
		return false;
	case KVM_EXIT_SYSTEM_EVENT:
		log_info("vCPU %d: system event %u (reset or shutdown)", v->index,
			 run->system_event.type);
		vm_request_stop(v->vm, EXIT_GUEST_RESET);
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		snprintf(what, sizeof(what), "KVM_EXIT_FAIL_ENTRY, hardware reason 0x%llx",
			 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		report_internal_error(v, what);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		snprintf(what, sizeof(what), "KVM_EXIT_INTERNAL_ERROR, suberror %u%s",
			 run->internal.suberror,
			 run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION
			     ? " (instruction emulation failed)"
			     : "");
		report_internal_error(v, what);
		return false;
	default:
		snprintf(what, sizeof(what), "unexpected exit reason %u", run->exit_reason);
		report_internal_error(v, what);
		return false;
	}
}

/* Wait outside KVM_RUN until resumed or the VM stops (vcpus_stop broadcasts). */
static void park(struct vcpu *v)
{
	struct vm *vm = v->vm;
	pthread_mutex_lock(&vm->pause_lock);
	v->paused = true;
	pthread_cond_broadcast(&vm->pause_cond); /* vcpus_pause waits for this */
	while (vm->pause_requested && !vm_is_stopping(vm))
		pthread_cond_wait(&vm->pause_cond, &vm->pause_lock);
	v->paused = false;
	pthread_mutex_unlock(&vm->pause_lock);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	/* Only the boot vCPU's path to its first KVM_RUN is part of the start-up chain. */
	bool timed = v->index == 0;
	v->tid = (pid_t)syscall(SYS_gettid);
	char name[16];
	snprintf(name, sizeof(name), "vcpu%d", v->index);
	pthread_setname_np(pthread_self(), name);
	if (vm->cfg->pinned[v->index] &&
	    sched_setaffinity(0, sizeof(cpu_set_t), &vm->cfg->pin_sets[v->index]) < 0) {
		log_error("vCPU %d: cannot pin to the requested CPUs: %s", v->index,
			  strerror(errno));
		vm_request_stop(vm, EXIT_USAGE);
	}
	/* Narrow this thread's system calls before it runs guest code. */
	char err[160];
	if (timed)
		startup_mark(STARTUP_THREADS);
	if (vm->seccomp && seccomp_install(vm->seccomp, SECCOMP_VCPU, err, sizeof(err))) {
		log_error("vCPU %d: %s", v->index, err);
		vm_request_stop(vm, EXIT_VMM_ERROR);
	}
	if (timed && vm->seccomp)
		startup_mark(STARTUP_SECCOMP);
	pthread_barrier_wait(&vm->start_barrier); /* thread ready, tid known */
	pthread_barrier_wait(&vm->start_barrier); /* main thread printed the table */
	if (timed)
		startup_mark(STARTUP_THREADS);

	while (!vm_is_stopping(vm)) {
		if (__atomic_load_n(&vm->pause_requested, __ATOMIC_SEQ_CST)) {
			/* KVM finishes an I/O or MMIO read only on the next KVM_RUN: enter once
			 * with immediate_exit so the state a snapshot reads while parked is whole.
			 */
			v->run->immediate_exit = 1;
			ioctl(v->fd, KVM_RUN, 0);
			v->run->immediate_exit = 0;
			park(v);
			continue; /* re-check stopping */
		}
		int rc = ioctl(v->fd, KVM_RUN, 0);
		if (rc < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				v->run->immediate_exit = 0;
				continue;
			}
			log_error("vCPU %d: KVM_RUN: %s", v->index, strerror(errno));
			vm_request_stop(vm, EXIT_VMM_ERROR);
			break;
		}
		vcpu_count_exit(v, v->run->exit_reason);
		if (!handle_exit(v))
			break;
	}
	return NULL;
}

static void kick_handler(int sig)
{
	(void)sig;
}

int vcpus_start(struct vm *vm)
{
	struct sigaction sa = {.sa_handler = kick_handler};
	sigemptyset(&sa.sa_mask);
	sigaction(SIG_VCPU_KICK, &sa, NULL);
	pthread_barrier_init(&vm->start_barrier, NULL, (unsigned)vm->nr_vcpus + 1);
	for (int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		int rc = pthread_create(&v->thread, NULL, vcpu_thread, v);
		if (rc) {
			log_error("cannot start vCPU thread %d: %s", i, strerror(rc));
			/* Threads already started wait on the barrier forever; exit instead. */
			return -1;
		}
		v->started = true;
	}
	pthread_barrier_wait(&vm->start_barrier);
	for (int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		cpu_set_t actual;
		char list[256] = "?";
		if (sched_getaffinity(v->tid, sizeof(actual), &actual) == 0)
			format_cpu_list(&actual, list, sizeof(list));
		if (vm->cfg->pinned[i] && !CPU_EQUAL(&actual, &vm->cfg->pin_sets[i])) {
			log_error("vCPU %d: pinning did not take effect (affinity is %s)", i, list);
			vm_request_stop(vm, EXIT_USAGE);
		}
		log_info("vcpu %d: tid %d, host cpus %s%s", i, (int)v->tid, list,
			 vm->cfg->pinned[i] ? " (pinned)" : "");
	}
	pthread_barrier_wait(&vm->start_barrier);
	return 0;
}

static int count_paused(struct vm *vm)
{
	int n = 0;
	for (int i = 0; i < vm->nr_vcpus; i++)
		n += vm->vcpus[i].started && vm->vcpus[i].paused;
	return n;
}

int vcpus_pause(struct vm *vm, unsigned timeout_ms)
{
	pthread_mutex_lock(&vm->pause_lock);
	/* Set before immediate_exit: a vCPU that clears immediate_exit after an EINTR then sees
	 * pause_requested on its next loop check. */
	__atomic_store_n(&vm->pause_requested, true, __ATOMIC_SEQ_CST);
	for (int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		if (!v->started || v->paused)
			continue;
		if (v->run)
			__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
		pthread_kill(v->thread, SIG_VCPU_KICK);
	}
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	int n;
	while ((n = count_paused(vm)) < vm->nr_vcpus && !vm_is_stopping(vm))
		if (pthread_cond_timedwait(&vm->pause_cond, &vm->pause_lock, &deadline))
			break;
	n = count_paused(vm);
	pthread_mutex_unlock(&vm->pause_lock);
	return n;
}

void vcpus_resume(struct vm *vm)
{
	pthread_mutex_lock(&vm->pause_lock);
	__atomic_store_n(&vm->pause_requested, false, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->pause_lock);
}

bool vcpu_is_paused(struct vm *vm, int i)
{
	pthread_mutex_lock(&vm->pause_lock);
	bool p = vm->vcpus[i].paused;
	pthread_mutex_unlock(&vm->pause_lock);
	return p;
}

void vcpus_stop(struct vm *vm)
{
	/* Parked vCPUs see the stop request once woken. */
	pthread_mutex_lock(&vm->pause_lock);
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->pause_lock);
	for (int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		if (!v->started)
			continue;
		/* immediate_exit closes the race with a thread about to enter KVM_RUN. */
		if (v->run)
			v->run->immediate_exit = 1;
		pthread_kill(v->thread, SIG_VCPU_KICK);
	}
	for (int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		if (v->started)
			pthread_join(v->thread, NULL);
		v->started = false;
		if (v->run)
			munmap(v->run, (size_t)vm->vcpu_mmap_size);
		v->run = NULL;
		if (v->fd > 0)
			close(v->fd);
		v->fd = -1;
	}
}
