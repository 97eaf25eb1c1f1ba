#include "vm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "arch/x86/machine.h"
#include "kvm_util.h"
#include "gsi_routing.h"
#include "base/log.h"
#include "base/startup_timing.h"
#include "vmm/kinds/device_registry.h"

/* A device whose back end maps guest RAM too (vhost-user) needs it shared; private anonymous
 * memory otherwise, which keeps transparent huge pages whatever the host's shmem setting. */
static bool shares_memory(const struct vm_config *cfg)
{
	for (int i = 0; i < cfg->nr_devices; i++) {
		const struct device_kind_desc *kind = cfg->devices[i].kind;
		if (kind->shares_memory ||
		    (kind->shares_memory_of && kind->shares_memory_of(cfg->devices[i].parsed)))
			return true;
	}
	return false;
}

static int add_memory_slots(struct vm *vm)
{
	for (int i = 0; i < vm->mem.nr_regions; i++) {
		const struct mem_region *r = &vm->mem.regions[i];
		struct kvm_userspace_memory_region slot = {
		    .slot = (uint32_t)i,
		    .guest_phys_addr = r->gpa,
		    .memory_size = r->size,
		    .userspace_addr = (uint64_t)(uintptr_t)r->hva,
		};
		if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot) < 0) {
			log_error("KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

int vm_create(struct vm *vm, const struct vm_config *cfg)
{
	memset(vm, 0, sizeof(*vm));
	vm->cfg = cfg;
	vm->vm_fd = -1;
	vm->loop.epoll_fd = vm->loop.wake_fd = -1;
	vm->stop_fd = -1;
	vm->nr_vcpus = cfg->nr_cpus;
	pthread_mutex_init(&vm->stop_lock, NULL);
	io_bus_init(&vm->pio);
	io_bus_init(&vm->mmio);

	vm->kvm_fd = kvm_open();
	if (vm->kvm_fd < 0)
		return -1;
	if (kvm_check_caps(vm->kvm_fd))
		return -1;
	vm->vcpu_mmap_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vm->vcpu_mmap_size <= 0) {
		log_error("KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno));
		return -1;
	}
	int max_vcpus = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	if (max_vcpus > 0 && cfg->nr_cpus > max_vcpus) {
		log_error("--cpus %d exceeds this KVM's limit of %d vCPUs", cfg->nr_cpus,
			  max_vcpus);
		return -1;
	}
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		log_error("KVM_CREATE_VM: %s", strerror(errno));
		return -1;
	}
	startup_mark(STARTUP_KVM);
	int rc = cfg->restore_dir ? guest_mem_init_file(&vm->mem, cfg->memory_bytes, cfg->memory_fd)
				  : guest_mem_init(&vm->mem, cfg->memory_bytes, cfg->populate,
						   shares_memory(cfg));
	if (rc) {
		log_error("cannot allocate %llu MiB of guest memory: %s",
			  (unsigned long long)(cfg->memory_bytes >> 20), strerror(-rc));
		return -1;
	}
	startup_mark(STARTUP_MEMORY);
	if (add_memory_slots(vm) || x86_machine_create(vm->vm_fd))
		return -1;
	if (event_loop_init(&vm->loop))
		return -1;
	vm->gsi_routing = gsi_routing_create(vm->vm_fd);
	if (!vm->gsi_routing)
		return -1;
	vm->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (vm->stop_fd < 0) {
		log_error("eventfd: %s", strerror(errno));
		return -1;
	}
	startup_mark(STARTUP_KVM);
	return 0;
}

void vm_destroy(struct vm *vm)
{
	event_loop_destroy(&vm->loop);
	if (vm->gsi_routing)
		gsi_routing_destroy(vm->gsi_routing);
	guest_mem_destroy(&vm->mem);
	if (vm->stop_fd >= 0)
		close(vm->stop_fd);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	host_cpuid_destroy(&vm->host_cpuid);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	io_bus_destroy(&vm->pio);
	io_bus_destroy(&vm->mmio);
	pthread_mutex_destroy(&vm->stop_lock);
}

void vm_set_irq(struct vm *vm, int gsi, int level)
{
	struct kvm_irq_level irq = {.irq = (uint32_t)gsi, .level = (uint32_t)level};
	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq) < 0)
		log_warn("KVM_IRQ_LINE %d: %s", gsi, strerror(errno));
}

static void request_stop(struct vm *vm, int status, bool by_guest)
{
	pthread_mutex_lock(&vm->stop_lock);
	if (!vm->stopping) {
		vm->exit_by_guest = by_guest;
		vm->stopping = true;
		vm->exit_status = status;
		uint64_t one = 1;
		if (write(vm->stop_fd, &one, sizeof(one)) < 0) {
			/* An eventfd write only fails on counter overflow; nothing to do. */
		}
	}
	pthread_mutex_unlock(&vm->stop_lock);
}

bool vm_is_stopping(struct vm *vm)
{
	pthread_mutex_lock(&vm->stop_lock);
	bool s = vm->stopping;
	pthread_mutex_unlock(&vm->stop_lock);
	return s;
}

void vm_request_stop(struct vm *vm, int status)
{
	request_stop(vm, status, false);
}

void vm_request_stop_by_guest(struct vm *vm, int status)
{
	request_stop(vm, status, true);
}
