/* The virtio-pci transport bound to a KVM VM: ioeventfds, irqfds, MSI routes, the INTx line. */
#include <stdio.h>
#include <stdlib.h>

#include "devices/virtio/pci.h"
#include "vmm/kvm_irq.h"
#include "vmm/vm.h"

static int host_ioeventfd(void *opaque, uint64_t addr, int fd, bool add)
{
	/* Length 0: any write width matches (KVM_CAP_IOEVENTFD_ANY_LENGTH), no datamatch. */
	return add ? kvm_ioeventfd_add(opaque, addr, 0, false, false, 0, fd)
		   : kvm_ioeventfd_del(opaque, addr, 0, false, false, 0, fd);
}

static int host_irqfd(void *opaque, int gsi, int fd, bool add)
{
	return add ? kvm_irqfd_add(opaque, gsi, fd) : kvm_irqfd_del(opaque, gsi, fd);
}

static void host_set_irq(void *opaque, int gsi, int level)
{
	vm_set_irq(opaque, gsi, level);
}

struct virtio_pci *virtio_pci_create(struct vm *vm, struct pci_bus *bus, struct virtio_dev *dev,
				     char *err, size_t errlen)
{
	if (!vm->gsi_routing) {
		snprintf(err, errlen, "%s: the VM has no GSI routing table", dev->label);
		return NULL;
	}
	struct virtio_pci *vp = malloc(sizeof(*vp));
	if (!vp) {
		snprintf(err, errlen, "%s: out of memory", dev->label);
		return NULL;
	}
	const struct virtio_pci_host host = {
	    .opaque = vm,
	    .ioeventfd = host_ioeventfd,
	    .irqfd = host_irqfd,
	    .set_irq = host_set_irq,
	    .routing = vm->gsi_routing,
	    .loop = &vm->loop,
	};
	if (virtio_pci_init(vp, dev, &host, err, errlen)) {
		free(vp);
		return NULL;
	}
	if (pci_bus_add_device(bus, &vp->pci) < 0) {
		snprintf(err, errlen, "%s: no free PCI slot or BAR space", dev->label);
		virtio_pci_cleanup(vp);
		free(vp);
		return NULL;
	}
	return vp;
}

void virtio_pci_destroy(struct virtio_pci *vp)
{
	if (!vp)
		return;
	virtio_pci_cleanup(vp);
	free(vp);
}
