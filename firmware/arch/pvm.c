/* PVM opt-in (see PLATFORM.md): rdmsr signature, then register a per-CPU VIF page. */
#include "lib.h"
#include "probe.h"
#include "pvm.h"
#include "traps.h"
#include "x86.h"

#define MSR_PVM_VIF	  0x4b564d10
#define MSR_PVM_SIGNATURE 0x4b564d11
#define PVM_SIGNATURE	  0x4d5650 /* "PVM" */
#define VIF_STORE_CR2	  (1u << 4)

static uint8_t vif_pages[MAX_CPUS][4096] __attribute__((section(".noinit"), aligned(4096)));
/* In .data, not .bss: pvm_probe() runs before start.S zeroes .bss. */
static bool pvm __attribute__((section(".data")));
static bool msr_faulted __attribute__((section(".data")));

void pvm_opt_in(unsigned cpu)
{
	struct pvm_vif *v = (struct pvm_vif *)vif_pages[cpu];
	*v = (struct pvm_vif){0}; /* two stores: cheaper than memset while emulated */
	barrier();
	/* From the next instruction on this vCPU runs natively. */
	wrmsr(MSR_PVM_VIF, (uint64_t)v | VIF_STORE_CR2);
}

void pvm_probe(void)
{
	uint64_t sig;
	msr_faulted = rdmsr_safe(MSR_PVM_SIGNATURE, &sig) != 0;
	if (msr_faulted || sig != PVM_SIGNATURE)
		return;
	pvm = true;
	pvm_opt_in(0);
}

bool pvm_active(void)
{
	return pvm;
}

volatile struct pvm_vif *pvm_vif(unsigned cpu)
{
	return (volatile struct pvm_vif *)vif_pages[cpu];
}

enum exec_mode exec_mode(void)
{
	if (pvm)
		return MODE_NATIVE_PVM;
	uint32_t r[4];
	cpuid(1, 0, r);
	if (!(r[2] & (1u << 31))) /* no hypervisor bit */
		return MODE_HARDWARE;
	cpuid(0x40000000, 0, r);
	char sig[12];
	memcpy(sig, &r[1], 4);
	memcpy(sig + 4, &r[2], 4);
	memcpy(sig + 8, &r[3], 4);
	if (!memcmp(sig, "TCGTCGTCGTCG", 12))
		return MODE_EMULATED;
	return MODE_HARDWARE; /* "KVMKVMKVM\0\0\0" or another KVM-like hypervisor */
}

const char *exec_mode_name(enum exec_mode m)
{
	switch (m) {
	case MODE_NATIVE_PVM:
		return "native-pvm";
	case MODE_EMULATED:
		return "emulated";
	default:
		return "hardware";
	}
}
