#include "kvm_irq.h"

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vm.h"
#include "base/log.h"

static int ioeventfd(struct vm *vm, uint64_t addr, uint32_t len, bool pio, bool datamatch,
		     uint64_t value, int fd, bool deassign)
{
	struct kvm_ioeventfd io = {
	    .datamatch = datamatch ? value : 0,
	    .addr = addr,
	    .len = len,
	    .fd = fd,
	    .flags = (pio ? KVM_IOEVENTFD_FLAG_PIO : 0) |
		     (datamatch ? KVM_IOEVENTFD_FLAG_DATAMATCH : 0) |
		     (deassign ? KVM_IOEVENTFD_FLAG_DEASSIGN : 0),
	};
	if (ioctl(vm->vm_fd, KVM_IOEVENTFD, &io) < 0) {
		log_error("KVM_IOEVENTFD %s 0x%llx: %s", deassign ? "remove" : "add",
			  (unsigned long long)addr, strerror(errno));
		return -1;
	}
	return 0;
}

int kvm_ioeventfd_add(struct vm *vm, uint64_t addr, uint32_t len, bool pio, bool datamatch,
		      uint64_t value, int fd)
{
	return ioeventfd(vm, addr, len, pio, datamatch, value, fd, false);
}

int kvm_ioeventfd_del(struct vm *vm, uint64_t addr, uint32_t len, bool pio, bool datamatch,
		      uint64_t value, int fd)
{
	return ioeventfd(vm, addr, len, pio, datamatch, value, fd, true);
}

static int irqfd(struct vm *vm, int gsi, int fd, bool deassign)
{
	struct kvm_irqfd irq = {
	    .fd = (uint32_t)fd,
	    .gsi = (uint32_t)gsi,
	    .flags = deassign ? KVM_IRQFD_FLAG_DEASSIGN : 0,
	};
	if (ioctl(vm->vm_fd, KVM_IRQFD, &irq) < 0) {
		log_error("KVM_IRQFD %s gsi %d: %s", deassign ? "remove" : "add", gsi,
			  strerror(errno));
		return -1;
	}
	return 0;
}

int kvm_irqfd_add(struct vm *vm, int gsi, int fd)
{
	return irqfd(vm, gsi, fd, false);
}

int kvm_irqfd_del(struct vm *vm, int gsi, int fd)
{
	return irqfd(vm, gsi, fd, true);
}
