/*
 * AP start-up: smp.c copies [tramp_start, tramp_end) to TRAMPOLINE_ADDR; a SIPI
 * enters it in real mode at CS:IP = 0x0800:0. It goes straight to long mode on
 * the BSP's page tables, then jumps to ap_entry64 in the image.
 */
#include "probe.h"

/* Address of a trampoline label once copied to TRAMPOLINE_ADDR. */
#define TR(x) (TRAMPOLINE_ADDR + (x) - tramp_start)

	.section .rodata, "a"
	.globl tramp_start, tramp_end
	.code16
tramp_start:
	cli
	cld
	xor	%ax, %ax
	mov	%ax, %ds
	lgdtl	TR(tramp_gdt_ptr)
	mov	%cr0, %eax
	or	$1, %eax
	mov	%eax, %cr0
	ljmpl	$SEL_CODE32, $TR(tramp32)

	.code32
tramp32:
	mov	$SEL_DATA, %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %ss
	mov	%cr4, %eax
	or	$0x20, %eax		/* PAE */
	mov	%eax, %cr4
	mov	$pml4, %eax
	mov	%eax, %cr3
	mov	$0xc0000080, %ecx	/* EFER.LME */
	rdmsr
	or	$0x100, %eax
	wrmsr
	mov	%cr0, %eax
	or	$0x80000000, %eax	/* PG */
	mov	%eax, %cr0
	ljmp	$SEL_CODE64, $TR(tramp64)

	.code64
tramp64:
	mov	$ap_entry64, %eax
	jmp	*%rax

	.balign 8
tramp_gdt:
	.quad	0
	.quad	0x00af9b000000ffff
	.quad	0x00cf93000000ffff
	.quad	0x00cf9b000000ffff
tramp_gdt_ptr:
	.word	tramp_gdt_ptr - tramp_gdt - 1
	.long	TR(tramp_gdt)
tramp_end:

/* Long mode on the image: own GDT, per-AP stack, then C. */
	.text
	.globl ap_entry64
ap_entry64:
	lgdt	gdt_ptr(%rip)
	mov	$SEL_DATA, %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %ss
	/* Our stack is found by our APIC ID (smp.c): no shared state races with the BSP. */
	mov	$0xfee00020, %edx
	mov	(%rdx), %eax
	shr	$24, %eax
	lea	ap_stack_by_apic(%rip), %rdx
	mov	(%rdx,%rax,8), %rsp
	test	%rsp, %rsp
	jz	2f
	pushq	$SEL_CODE64
	lea	1f(%rip), %rax
	push	%rax
	lretq
1:	call	ap_main
2:	cli
	hlt
	jmp	2b
