/*
 * Entry points. Both run emulated on PVM until pvm_probe() opts in, so everything
 * before it is kept to a few dozen instructions: the page tables are static
 * (page_tables.S), only the #GP gate the detection needs is installed, and .bss is
 * zeroed after the opt-in. Then fw_main(proto, info).
 */
#include "probe.h"

#define MSR_EFER 0xc0000080
#define EFER_LME 0x100
#define CR4_PAE  0x20
#define CR0_PE_PG 0x80000001

	.section .head, "ax"

/*
 * PVH: 32-bit protected mode, paging off, EBX = hvm_start_info. The PVH ABI gives flat
 * CS, DS and ES, and nothing here uses the stack, so there is no 32-bit segment reload:
 * the far jump below loads CS, and common64 the data segments.
 */
	.code32
	.globl pvh_entry
pvh_entry:
	cli
	cld
	mov	%ebx, %esi
	lgdt	gdt_ptr
	mov	$pml4, %eax
	mov	%eax, %cr3
	mov	%cr4, %eax
	or	$CR4_PAE, %eax
	mov	%eax, %cr4
	mov	$MSR_EFER, %ecx
	rdmsr
	or	$EFER_LME, %eax
	wrmsr
	mov	%cr0, %eax
	or	$CR0_PE_PG, %eax
	mov	%eax, %cr0
	ljmp	$SEL_CODE64, $3f
	.code64
3:	mov	%esi, %esi		/* upper halves are undefined after the mode switch */
	mov	$BOOT_PVH, %edi
	jmp	common64

/* Linux 64-bit boot protocol: load address + 0x200, RSI = boot_params. */
	.org	0x200
	.globl linux64_entry
linux64_entry:
	cli
	cld
	/* Our static tables map this code just as the VMM's tables do. */
	mov	$pml4, %eax
	mov	%rax, %cr3
	lgdt	gdt_ptr(%rip)
	lea	stack_top(%rip), %rsp	/* lretq below needs a stack we own */
	pushq	$SEL_CODE64
	lea	2f(%rip), %rax
	push	%rax
	lretq
2:	mov	$BOOT_LINUX64, %edi
	jmp	common64

	.text
common64:
	mov	$SEL_DATA, %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %ss
	xor	%eax, %eax
	mov	%eax, %fs
	mov	%eax, %gs
	lea	stack_top(%rip), %rsp
	mov	%rdi, %r12
	mov	%rsi, %r13
	call	idt_init_early		/* just the #GP gate the detection's rdmsr needs */
	call	pvm_probe		/* on PVM: emulated until here, native afterwards */
	/* Variables used above live in .data, so zeroing .bss only now loses nothing. */
	lea	__bss_start(%rip), %rdi
	lea	__bss_end(%rip), %rcx
	sub	%rdi, %rcx
	shr	$3, %rcx
	xor	%eax, %eax
	rep stosq
	mov	%r12, %rdi
	mov	%r13, %rsi
	call	fw_main
halt_forever:
	cli
	hlt
	jmp	halt_forever

	.globl gdt, gdt_ptr
	.data
	.balign 16
/* Accessed bits preset so the CPU never writes the GDT. */
gdt:
	.quad	0
	.quad	0x00af9b000000ffff	/* SEL_CODE64 */
	.quad	0x00cf93000000ffff	/* SEL_DATA */
	.quad	0x00cf9b000000ffff	/* SEL_CODE32 */
gdt_end:
	.balign 8
gdt_ptr:
	.word	gdt_end - gdt - 1
	.quad	gdt

	.section .noinit, "aw", @nobits
	.balign 16
	.skip	16384
stack_top:

/* XEN_ELFNOTE_PHYS32_ENTRY: tells PVH loaders the 32-bit entry. */
	.section .note.Xen, "a", @note
	.balign 4
	.long	4
	.long	4
	.long	18
	.asciz	"Xen"
	.long	pvh_entry
