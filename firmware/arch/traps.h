/* IDT set-up and exception handling. */
#ifndef TRAPS_H
#define TRAPS_H

#include <stdint.h>

/* Pushed by traps.S, lowest address first. */
struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss; /* pushed by the CPU */
};

/* BSP, before the PVM opt-in: just the #GP gate (rdmsr detection), and load the IDT. */
void idt_init_early(void);
/* BSP, once, after idt_init_early(): the other exception gates. */
void idt_init(void);
/* Point vector v at handler (a 64-bit interrupt gate, DPL 0). */
void idt_set_gate(unsigned v, const void *handler);
/* Load the IDT on this CPU. */
void idt_load(void);

/* Run an rdmsr whose #GP is expected: returns 0 and *val, or -1 if it faulted. */
int rdmsr_safe(uint32_t msr, uint64_t *val);

void trap_handler(struct trap_frame *f);

#endif
