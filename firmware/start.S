/*
 * Entry points. Both run emulated on PVM until pvm_opt_in(), so they stay short:
 * build our own page tables (U/S=1 everywhere: supervisor pages livelock PVM's
 * shadow MMU), load our GDT, switch stack, zero .bss, call fw_main(proto, info).
 */
#include "probe.h"

#define PTE_P   0x1
#define PTE_RW  0x2
#define PTE_US  0x4
#define PTE_PS  0x80
#define PTE_DIR (PTE_P | PTE_RW | PTE_US)
#define PTE_2M  (PTE_P | PTE_RW | PTE_US | PTE_PS)
#define MSR_EFER 0xc0000080
#define EFER_LME 0x100
#define CR4_PAE  0x20
#define CR0_PE_PG 0x80000001

	.section .head, "ax"

/* PVH: 32-bit protected mode, paging off, EBX = hvm_start_info. */
	.code32
	.globl pvh_entry
pvh_entry:
	cli
	cld
	mov	%ebx, %esi
	lgdt	gdt_ptr
	mov	$SEL_DATA, %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %ss
	ljmp	$SEL_CODE32, $1f
1:
	/* PML4 and PDPT are adjacent: clear both, then link the first entries. */
	mov	$pml4, %edi
	mov	$(2 * 4096 / 4), %ecx
	xor	%eax, %eax
	rep stosl
	movl	$(pdpt + PTE_DIR), pml4
	movl	$(pd + 0x0000 + PTE_DIR), pdpt
	movl	$(pd + 0x1000 + PTE_DIR), pdpt + 8
	movl	$(pd + 0x2000 + PTE_DIR), pdpt + 16
	movl	$(pd + 0x3000 + PTE_DIR), pdpt + 24
	/* 2048 x 2 MiB = identity map of 4 GiB (LAPIC included). */
	mov	$pd, %edi
	mov	$PTE_2M, %eax
	mov	$2048, %ecx
2:	mov	%eax, (%edi)
	movl	$0, 4(%edi)
	add	$0x200000, %eax
	add	$8, %edi
	dec	%ecx
	jnz	2b

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
	/* The VMM's tables still map us; build ours (same layout as above). */
	lea	pml4(%rip), %rdi
	mov	$(2 * 4096 / 8), %ecx
	xor	%eax, %eax
	rep stosq
	movq	$(pdpt + PTE_DIR), pml4(%rip)
	movq	$(pd + 0x0000 + PTE_DIR), pdpt(%rip)
	movq	$(pd + 0x1000 + PTE_DIR), pdpt + 8(%rip)
	movq	$(pd + 0x2000 + PTE_DIR), pdpt + 16(%rip)
	movq	$(pd + 0x3000 + PTE_DIR), pdpt + 24(%rip)
	lea	pd(%rip), %rdi
	mov	$PTE_2M, %eax
	mov	$2048, %ecx
1:	mov	%rax, (%rdi)
	add	$0x200000, %rax
	add	$8, %rdi
	dec	%ecx
	jnz	1b
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
	/* .bss is small (big buffers live in .noinit), so this is cheap even emulated. */
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
	.balign 4096
	.globl pml4
pml4:	.skip	4096
pdpt:	.skip	4096
pd:	.skip	4 * 4096
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
