/* PVM (this machine's software KVM) detection and opt-in to native execution. */
#ifndef PVM_H
#define PVM_H

#include <stdbool.h>
#include <stdint.h>

#define MSR_PVM_TSC_KHZ 0x4b564d13

/* The VIF page's layout (PLATFORM.md): the virtual interrupt flag, at the start of the page. */
struct pvm_vif {
	uint8_t if_;	 /* 0: interrupts off (cli/sti do not change it) */
	uint8_t pending; /* an interrupt waits: after if_ = 1, trap once so it is delivered */
	uint8_t pad[6];
	uint64_t cr2;
};

enum exec_mode {
	MODE_NATIVE_PVM, /* opted in: runs natively at ring 3 */
	MODE_HARDWARE,	 /* VT-x/AMD-V KVM, or no/unknown hypervisor */
	MODE_EMULATED,	 /* QEMU TCG */
};

/*
 * BSP, from start.S before .bss is zeroed: detect PVM and, if present, register VIF
 * page 0. Needs the #GP gate (idt_init_early(): the rdmsr may fault).
 */
void pvm_probe(void);
/* AP: register this CPU's VIF page if the BSP found PVM. */
void pvm_opt_in(unsigned cpu);
bool pvm_active(void);
/* This CPU's VIF page (valid once pvm_opt_in() ran for it). */
volatile struct pvm_vif *pvm_vif(unsigned cpu);
enum exec_mode exec_mode(void);
const char *exec_mode_name(enum exec_mode m);

#endif
