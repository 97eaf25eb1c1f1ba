/* Exception handling: skip expected rdmsr/wrmsr faults (PVM detection), fail on anything else. */
#include "exit.h"
#include "printf.h"
#include "traps.h"
#include "x86.h"

#define VEC_GP 13

/* Set by the #GP handler when it skipped an rdmsr/wrmsr; per-CPU use is serialized. */
static volatile int msr_faulted;

int rdmsr_safe(uint32_t msr, uint64_t *val)
{
	msr_faulted = 0;
	*val = rdmsr(msr);
	return msr_faulted ? -1 : 0;
}

void trap_handler(struct trap_frame *f)
{
	const uint8_t *ip = (const uint8_t *)f->rip;
	if (f->vector == VEC_GP && ip[0] == 0x0f && (ip[1] == 0x32 || ip[1] == 0x30)) {
		if (ip[1] == 0x32) /* rdmsr reads as 0 */
			f->rax = f->rdx = 0;
		f->rip += 2;
		msr_faulted = 1;
		return;
	}
	kprintf("probe: exception vector=%lu error=0x%lx rip=0x%lx\n", f->vector, f->error, f->rip);
	probe_fail("exception");
}
