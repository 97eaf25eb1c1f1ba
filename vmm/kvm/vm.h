/* The virtual machine: KVM handles, guest memory, buses, vCPUs and the exit protocol. */
#ifndef MINIVMM_VM_H
#define MINIVMM_VM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch/x86/host_cpuid.h"
#include "vmm/cli/config.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"
#include "base/io_bus.h"

struct kvm_run;
struct pci_bus;
struct serial;
struct console;
struct gsi_routing;
struct virtio_devices;
struct seccomp_policy;

/* Exit statuses for guest outcomes; documented in README.md and --help. */
#define EXIT_GUEST_RESET    0
#define EXIT_VMM_ERROR	    1
#define EXIT_USAGE	    2
#define EXIT_TRIPLE_FAULT   98
#define EXIT_INTERNAL_ERROR 99

/* What a KVM_RUN exit was, for counting (netbench --breakdown: exits per packet). */
enum vcpu_exit_class {
	VCPU_EXIT_IO,	 /* KVM_EXIT_IO: a port access */
	VCPU_EXIT_MMIO,	 /* KVM_EXIT_MMIO: an access to an unbacked guest-physical address */
	VCPU_EXIT_HLT,	 /* KVM_EXIT_HLT */
	VCPU_EXIT_OTHER, /* anything else (signals, system events, errors) */
	VCPU_EXIT_CLASSES
};

struct vcpu {
	struct vm *vm;
	int index;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	pid_t tid;
	bool started;
	bool paused; /* parked outside KVM_RUN (vcpus_pause); guarded by vm->pause_lock */
	/* KVM_RUN exits by vcpu_exit_class: added to only by this vCPU's thread, read by status
	 * with relaxed atomics (a figure a few exits old is fine for counting). */
	uint64_t exits[VCPU_EXIT_CLASSES];
};

struct vm {
	const struct vm_config *cfg;
	int kvm_fd;
	struct host_cpuid host_cpuid; /* KVM's supported CPUID, fetched for vCPU 0 */
	int vm_fd;
	int vcpu_mmap_size;
	struct guest_mem mem;
	struct io_bus pio;
	struct io_bus mmio;
	int nr_vcpus;
	struct vcpu vcpus[MAX_VCPUS];

	struct event_loop loop;		 /* the I/O thread */
	struct pci_bus *pci;		 /* the PCI bus (devices/pci.h), owned by main */
	struct gsi_routing *gsi_routing; /* KVM's GSI routes (vmm/kvm/gsi_routing.h), owned */
	struct serial *serial;
	struct console *console;
	struct virtio_devices *virtio; /* the VM's virtio devices (control socket status) */
	/* The filters each vCPU and the I/O thread install on themselves; NULL: --seccomp off. */
	const struct seccomp_policy *seccomp;

	/* The first guest outcome wins; the main thread waits on stop_fd (an eventfd). */
	pthread_mutex_t stop_lock;
	bool stopping;
	int exit_status;
	bool exit_by_guest; /* exit_status is what the guest wrote to the exit port */
	int stop_fd;

	/* Pause/resume from the control socket (vcpu.c): vCPU threads park on pause_cond while
	 * pause_requested is set; set up by vcpus_create. */
	pthread_mutex_t pause_lock;
	pthread_cond_t pause_cond;
	bool pause_requested;

	/* vCPU threads wait here until the main thread has printed the thread table. */
	pthread_barrier_t start_barrier;
};

/* Create the VM: KVM checks, memory, irqchip, PIT. Returns 0 or -1 (reason logged). */
int vm_create(struct vm *vm, const struct vm_config *cfg);
void vm_destroy(struct vm *vm);
/* Assert or deassert a GSI line on the in-kernel irqchip. */
void vm_set_irq(struct vm *vm, int gsi, int level);
/* Ask the VM to stop with status; the first request wins. Callable from any thread. */
void vm_request_stop(struct vm *vm, int status);
/* The same, the status the guest's own choice (its write to the exit port): exit_by_guest is set
 * when this is the stop that counts. */
void vm_request_stop_by_guest(struct vm *vm, int status);
bool vm_is_stopping(struct vm *vm);

#endif
