/* --timing: where minivmm's start-up goes, from exec to the guest's first serial byte.
 *
 * Each mark charges the time since the previous mark to one step, so the steps add up to the
 * total by construction. Marks are taken in causal order only: the main thread up to the start
 * of the vCPU threads, then vCPU 0 (its thread start, filter, first KVM_RUN), whose serial
 * byte ends the chain; the I/O thread marks while the main thread waits for it. When the
 * launcher puts CLOCK_MONOTONIC nanoseconds into STARTUP_T0_ENV just before exec, the total
 * starts there (step "exec": exec, dynamic loading, libc start-up); otherwise at main().
 * Off (the default), a mark costs one predicted branch. */
#ifndef MINIVMM_STARTUP_TIMING_H
#define MINIVMM_STARTUP_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STARTUP_T0_ENV "MINIVMM_T0_NS"

enum startup_step {
	STARTUP_EXEC,	 /* exec to main(): kernel exec, ld.so, libc start-up */
	STARTUP_ARGS,	 /* command-line parsing */
	STARTUP_KVM,	 /* /dev/kvm, KVM_CREATE_VM, memory slots, irqchip, PIT, GSI routing */
	STARTUP_MEMORY,	 /* guest RAM mapping */
	STARTUP_DEVICES, /* console, PCI bus, virtio devices, legacy PC devices */
	STARTUP_LOAD,	 /* reading kernel/initrd, loading the image, PVH/Linux boot data, e820 */
	STARTUP_TABLES,	 /* MP and ACPI tables, reset vector, boot page tables */
	STARTUP_VCPUS,	 /* KVM_CREATE_VCPU, CPUID, MSRs, registers */
	STARTUP_OTHER,	 /* console input, control socket, jail */
	STARTUP_SECCOMP, /* building and installing the system-call filters */
	STARTUP_THREADS, /* starting the I/O and vCPU threads, up to vCPU 0's first KVM_RUN */
	STARTUP_GUEST,	 /* first KVM_RUN to the first serial byte written out */
	STARTUP_NR_STEPS
};

struct startup_timing {
	bool from_exec;	 /* the total starts at exec (STARTUP_T0_ENV), not at main() */
	bool first_byte; /* the chain ended at the first serial byte */
	int64_t last_ns; /* the previous mark */
	int64_t step_ns[STARTUP_NR_STEPS];
};

/* Name of a step as printed ("exec", "kvm", ...). */
const char *startup_step_name(enum startup_step step);
/* Start a chain at main_ns; t0_text: STARTUP_T0_ENV's value or NULL. A t0 that is not a
 * decimal number of nanoseconds at or before main_ns is ignored (the total starts at main). */
void startup_timing_begin(struct startup_timing *t, int64_t main_ns, const char *t0_text);
/* Charge now_ns - last mark to step; ignored once the first byte ended the chain, and for a
 * clock that went backwards (counted as 0). */
void startup_timing_charge(struct startup_timing *t, enum startup_step step, int64_t now_ns);
/* One line, no newline: "startup-us: exec=U args=U ... guest=U total=U from=exec|main
 * first_byte=yes|no", each U microseconds with three decimals (exact nanoseconds, so the
 * steps add up to total); exec is "-" when the start is unknown. Returns the length
 * snprintf would write. */
int startup_timing_format(const struct startup_timing *t, char *buf, size_t len);

/* The process's one chain, for minivmm itself. */
extern bool startup_timing_enabled;
int64_t startup_now_ns(void);
void startup_timing_enable(int64_t main_ns); /* reads STARTUP_T0_ENV */
void startup_mark_slow(enum startup_step step);
void startup_first_byte_slow(void);
void startup_timing_report(void); /* the line on stderr, if enabled */

static inline void startup_mark(enum startup_step step)
{
	if (__builtin_expect(startup_timing_enabled, 0))
		startup_mark_slow(step);
}

/* At every serial byte written out; only the first one counts. */
static inline void startup_first_byte(void)
{
	if (__builtin_expect(startup_timing_enabled, 0))
		startup_first_byte_slow();
}

#endif
