/* The VM's whole life from a parsed configuration (vmm/vmm.c): what `minivmm` and `minivmm run`
 * both do once they know what to boot. */
#ifndef MINIVMM_VMM_H
#define MINIVMM_VMM_H

#include <stdbool.h>
#include <stdint.h>

struct vm_config;

struct vmm_outcome {
	bool quiet_status; /* in: no "exit status N" line (the caller reports the outcome) */
	bool ran;	   /* out: the guest started */
	bool by_guest;	   /* out: the guest chose the status (the exit port, 0xf4) */
};

/* Build, run and tear down the VM cfg describes (the caller keeps cfg and frees it); main_ns:
 * when the process started (for --timing). The exit status (vm.h's EXIT_*, the guest's own,
 * or 128 + a signal's number); outcome may be NULL. */
int vmm_boot(struct vm_config *cfg, int64_t main_ns, struct vmm_outcome *outcome);

#endif
