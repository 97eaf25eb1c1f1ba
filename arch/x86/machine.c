#include "machine.h"

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch/x86/layout.h"
#include "devices/virtio/mmio.h"
#include "base/log.h"

/* Addresses KVM needs for its real-mode TSS and identity map on Intel: top of the 4 GiB hole,
 * clear of the IOAPIC and LAPIC. */
#define KVM_TSS_ADDR	      0xfffbd000ULL
#define KVM_IDENTITY_MAP_ADDR 0xfffbc000ULL

/* ISA-range pins are edge-triggered and active-high by default under both ACPI and MP
 * tables: what irqfd's edge delivers. 0 (timer), 1, 2, 3, 4 (COM1) and 8 (RTC) are taken. */
static const int virtio_mmio_irqs[VIRTIO_MMIO_MAX_DEVS] = {5, 6, 7, 9, 10, 11, 12, 13, 14, 15};

int x86_machine_create(int vm_fd)
{
	/* Only Intel needs these; failures elsewhere are harmless. */
	ioctl(vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_ADDR);
	uint64_t identity = KVM_IDENTITY_MAP_ADDR;
	ioctl(vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &identity);

	if (ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		log_error("KVM_CREATE_IRQCHIP: %s", strerror(errno));
		return -1;
	}
	struct kvm_pit_config pit = {.flags = KVM_PIT_SPEAKER_DUMMY};
	if (ioctl(vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		log_error("KVM_CREATE_PIT2: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int x86_virtio_mmio_slot(int index, uint64_t *base, int *irq)
{
	if (index < 0 || index >= VIRTIO_MMIO_MAX_DEVS) {
		log_error("too many virtio-mmio devices (at most %d)", VIRTIO_MMIO_MAX_DEVS);
		return -1;
	}
	*base = VIRTIO_MMIO_BASE + (uint64_t)index * VIRTIO_MMIO_SIZE;
	*irq = virtio_mmio_irqs[index];
	return 0;
}
