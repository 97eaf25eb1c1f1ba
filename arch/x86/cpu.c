#include "cpu.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch/x86/cpuid.h"
#include "arch/x86/layout.h"
#include "base/log.h"

#define X86_CR0_PE   (1ULL << 0)
#define X86_CR0_ET   (1ULL << 4)
#define X86_CR0_NE   (1ULL << 5)
#define X86_CR0_PG   (1ULL << 31)
#define X86_CR4_PAE  (1ULL << 5)
#define X86_EFER_LME (1ULL << 8)
#define X86_EFER_LMA (1ULL << 10)

#define PTE_PRESENT (1ULL << 0)
#define PTE_RW	    (1ULL << 1)
#define PTE_USER    (1ULL << 2)
#define PTE_PS	    (1ULL << 7)

#define MSR_IA32_MISC_ENABLE 0x1a0
#define MSR_IA32_TSC	     0x10

/* GDT entries: flat 32-bit code (0x08), 64-bit code (0x10), data (0x18), TSS (0x20). */
static const uint64_t boot_gdt[] = {
    0, 0x00cf9b000000ffffULL, 0x00af9b000000ffffULL, 0x00cf93000000ffffULL, 0x00808b0000000067ULL,
};
#define GDT_CODE32_SELECTOR 0x08
#define GDT_TSS_SELECTOR    0x20

int x86_setup_boot_tables(struct guest_mem *mem)
{
	void *gdt = guest_mem_ptr(mem, BOOT_GDT_ADDR, sizeof(boot_gdt));
	uint64_t *pml4 = guest_mem_ptr(mem, PML4_ADDR, 4096);
	uint64_t *pdpt = guest_mem_ptr(mem, PDPT_ADDR, 4096);
	uint64_t *pd = guest_mem_ptr(mem, PD_ADDR, 4 * 4096);
	if (!gdt || !pml4 || !pdpt || !pd)
		return -1;
	memcpy(gdt, boot_gdt, sizeof(boot_gdt));
	/* U/S=1 everywhere: the PVM shadow MMU livelocks on supervisor pages, and it is harmless
	 * for Linux, which replaces these tables early. */
	const uint64_t flags = PTE_PRESENT | PTE_RW | PTE_USER;
	memset(pml4, 0, 4096);
	memset(pdpt, 0, 4096);
	pml4[0] = PDPT_ADDR | flags;
	for (uint64_t i = 0; i < 4; i++)
		pdpt[i] = (PD_ADDR + i * 4096) | flags;
	for (uint64_t i = 0; i < 4 * 512; i++)
		pd[i] = (i << 21) | flags | PTE_PS;
	return 0;
}

static void set_segment(struct kvm_segment *seg, uint16_t selector, uint8_t type, bool code64,
			bool db)
{
	*seg = (struct kvm_segment){
	    .base = 0,
	    .limit = 0xffffffff,
	    .selector = selector,
	    .type = type,
	    .present = 1,
	    .dpl = 0,
	    .db = db,
	    .s = 1,
	    .l = code64,
	    .g = 1,
	};
}

int x86_vcpu_set_boot_regs(int vcpu_fd, const struct boot_entry *entry)
{
	struct kvm_sregs sregs;
	if (ioctl(vcpu_fd, KVM_GET_SREGS, &sregs) < 0) {
		log_error("KVM_GET_SREGS: %s", strerror(errno));
		return -1;
	}
	struct kvm_segment data;
	set_segment(&data, BOOT_DS_SELECTOR, 0x3, false, true);
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = data;
	sregs.gdt.base = BOOT_GDT_ADDR;
	sregs.gdt.limit = sizeof(boot_gdt) - 1;
	sregs.idt.base = BOOT_IDT_ADDR;
	sregs.idt.limit = 0;
	sregs.tr = (struct kvm_segment){
	    .selector = GDT_TSS_SELECTOR, .limit = 0x67, .type = 11, .present = 1};
	struct kvm_regs regs = {.rflags = 2};
	regs.rip = entry->rip;
	if (entry->protocol == BOOT_PVH) {
		/* PVH: 32-bit protected mode, paging off, EBX = hvm_start_info. */
		set_segment(&sregs.cs, GDT_CODE32_SELECTOR, 0xb, false, true);
		sregs.cr0 = X86_CR0_PE | X86_CR0_ET;
		sregs.cr4 = 0;
		sregs.efer = 0;
		regs.rbx = entry->start_info;
	} else {
		/* Linux 64-bit entry: long mode on our identity tables, RSI = boot_params. */
		set_segment(&sregs.cs, BOOT_CS_SELECTOR, 0xb, true, false);
		sregs.cr0 = X86_CR0_PE | X86_CR0_ET | X86_CR0_NE | X86_CR0_PG;
		sregs.cr3 = PML4_ADDR;
		sregs.cr4 = X86_CR4_PAE;
		sregs.efer = X86_EFER_LME | X86_EFER_LMA;
		regs.rsi = entry->zero_page;
	}
	if (ioctl(vcpu_fd, KVM_SET_SREGS, &sregs) < 0) {
		log_error("KVM_SET_SREGS: %s", strerror(errno));
		return -1;
	}
	if (ioctl(vcpu_fd, KVM_SET_REGS, &regs) < 0) {
		log_error("KVM_SET_REGS: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int set_msrs(int vcpu_fd)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry entries[2];
	} msrs = {
	    .hdr = {.nmsrs = 2},
	    .entries = {{.index = MSR_IA32_MISC_ENABLE, .data = 1 /* fast strings */},
			{.index = MSR_IA32_TSC, .data = 0}},
	};
	int n = ioctl(vcpu_fd, KVM_SET_MSRS, &msrs);
	if (n != 2) {
		log_error("KVM_SET_MSRS set %d of 2 MSRs", n);
		return -1;
	}
	return 0;
}

static int set_fpu(int vcpu_fd)
{
	struct kvm_fpu fpu = {.fcw = 0x37f, .mxcsr = 0x1f80};
	if (ioctl(vcpu_fd, KVM_SET_FPU, &fpu) < 0) {
		log_error("KVM_SET_FPU: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* LINT0 delivers the 8259's ExtINT, LINT1 NMI: what a PC BIOS leaves for the OS. */
static int set_lapic_lints(int vcpu_fd)
{
	struct kvm_lapic_state lapic;
	if (ioctl(vcpu_fd, KVM_GET_LAPIC, &lapic) < 0) {
		log_error("KVM_GET_LAPIC: %s", strerror(errno));
		return -1;
	}
	const int lvt_lint0 = 0x350, lvt_lint1 = 0x360;
	const uint32_t mode_extint = 7u << 8, mode_nmi = 4u << 8, mode_mask = 7u << 8;
	uint32_t v;
	memcpy(&v, &lapic.regs[lvt_lint0], 4);
	v = (v & ~mode_mask & ~(1u << 16)) | mode_extint;
	memcpy(&lapic.regs[lvt_lint0], &v, 4);
	memcpy(&v, &lapic.regs[lvt_lint1], 4);
	v = (v & ~mode_mask & ~(1u << 16)) | mode_nmi;
	memcpy(&lapic.regs[lvt_lint1], &v, 4);
	if (ioctl(vcpu_fd, KVM_SET_LAPIC, &lapic) < 0) {
		log_error("KVM_SET_LAPIC: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int x86_vcpu_init(const struct kvm_cpuid2 *supported, int vcpu_fd, int index, int nr_cpus)
{
	if (x86_cpuid_setup(supported, vcpu_fd, index, nr_cpus))
		return -1;
	if (set_msrs(vcpu_fd) || set_fpu(vcpu_fd) || set_lapic_lints(vcpu_fd))
		return -1;
	return 0;
}

bool x86_vcpu_at_reset_vector(const struct kvm_regs *regs, const struct kvm_sregs *sregs)
{
	return regs->rip == 0xfff0 && sregs->cs.selector == 0xf000 && !(sregs->cr0 & X86_CR0_PE);
}

void x86_vcpu_dump(int vcpu_fd, const struct guest_mem *mem)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	if (ioctl(vcpu_fd, KVM_GET_REGS, &regs) < 0 || ioctl(vcpu_fd, KVM_GET_SREGS, &sregs) < 0) {
		log_error("cannot read vCPU registers: %s", strerror(errno));
		return;
	}
	if (x86_vcpu_at_reset_vector(&regs, &sregs)) {
		/* KVM on AMD (SVM) reinitialises the vCPU when it intercepts a shutdown: what is
		 * left is the reset state, which would only mislead. */
		log_error("registers: lost (this KVM reset the vCPU at the fault; AMD SVM does)");
		return;
	}
	const char *mode = !(sregs.cr0 & X86_CR0_PE)	 ? "real"
			   : (sregs.efer & X86_EFER_LMA) ? (sregs.cs.l ? "64-bit" : "compat")
							 : "protected";
	log_error("RIP=0x%llx RSP=0x%llx CS=0x%x (%s mode) CR0=0x%llx CR3=0x%llx CR4=0x%llx "
		  "EFER=0x%llx",
		  (unsigned long long)regs.rip, (unsigned long long)regs.rsp, sregs.cs.selector,
		  mode, (unsigned long long)sregs.cr0, (unsigned long long)sregs.cr3,
		  (unsigned long long)sregs.cr4, (unsigned long long)sregs.efer);
	struct kvm_translation tr = {.linear_address = sregs.cs.base + regs.rip};
	if (ioctl(vcpu_fd, KVM_TRANSLATE, &tr) < 0 || !tr.valid) {
		log_error("instruction bytes: RIP not mapped");
		return;
	}
	char hex[16 * 3 + 1] = "";
	for (int i = 0; i < 16; i++) {
		const uint8_t *b = guest_mem_ptr(mem, tr.physical_address + i, 1);
		if (!b)
			break;
		snprintf(hex + i * 3, sizeof(hex) - i * 3, "%02x ", *b);
	}
	log_error("instruction bytes at 0x%llx (gpa 0x%llx): %s", (unsigned long long)regs.rip,
		  (unsigned long long)tr.physical_address, hex[0] ? hex : "(outside RAM)");
}
