/* Exit-free paths between guest and VMM: ioeventfd (guest writes -> eventfd) and irqfd
 * (eventfd -> guest interrupt), plus MSI routing through KVM_SET_GSI_ROUTING. */
#ifndef MINIVMM_KVM_IRQ_H
#define MINIVMM_KVM_IRQ_H

#include <stdbool.h>
#include <stdint.h>

struct vm;

/* A guest write of len bytes to addr (port I/O when pio) signals fd instead of exiting.
 * With datamatch, only writes of that value do. Returns 0 or -1 (logged). */
int kvm_ioeventfd_add(struct vm *vm, uint64_t addr, uint32_t len, bool pio, bool datamatch,
		      uint64_t value, int fd);
int kvm_ioeventfd_del(struct vm *vm, uint64_t addr, uint32_t len, bool pio, bool datamatch,
		      uint64_t value, int fd);
/* Writing to fd raises gsi (edge). Returns 0 or -1 (logged). */
int kvm_irqfd_add(struct vm *vm, int gsi, int fd);
int kvm_irqfd_del(struct vm *vm, int gsi, int fd);

#endif
