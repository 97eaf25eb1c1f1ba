/* Thin wrappers around /dev/kvm: opening it with a useful error, capability checks. */
#ifndef MINIVMM_KVM_UTIL_H
#define MINIVMM_KVM_UTIL_H

#include <stdbool.h>

/* Open /dev/kvm and check the API version. Returns the fd or -1 (reason logged). */
int kvm_open(void);
/* Returns -1 (logged) if any required capability is missing. */
int kvm_check_caps(int kvm_fd);
bool kvm_has_cap(int fd, int cap);

#endif
