/*
 * Real-mode setup code of probe.bzImage, for loaders that use the 16-bit boot protocol
 * (QEMU's -kernel bzImage path): CS:0 = setup + 0x200 jumps here, DS = ES = SS = setup.
 * Like Linux's setup it builds boot_params (header copy + BIOS e820), then goes to long
 * mode on a temporary 1 GiB identity map and enters the 64-bit entry with RSI = boot_params.
 * Linked at SETUP_CODE (the packer copies it there); all data is addressed through DS.
 */
#include "probe.h"

#define BP        0x1000 /* boot_params, relative to the setup base */
#define PML4      0x2000 /* temporary page tables: the 64-bit entry replaces them */
#define PDPT      0x3000
#define PD        0x4000
#define HDR_START 0x1f1
#define HDR_END   0x270 /* end of struct setup_header */
#define SMAP      0x534d4150

	.code16
	.text
	.globl setup16
setup16:
	cli
	cld
	mov	%ds, %ax
	mov	%ax, %es
	movzwl	%ax, %ebx
	shl	$4, %ebx		/* ebx = linear setup base, kept to the end */

	mov	$BP, %di		/* zero boot_params and the three table pages */
	xor	%eax, %eax
	mov	$(4 * 4096 / 4), %ecx
	rep stosl
	mov	$HDR_START, %si
	mov	$(BP + HDR_START), %di
	mov	$(HDR_END - HDR_START), %cx
	rep movsb

	/* BIOS e820 into boot_params.e820_table (0x2d0), count at 0x1e8. */
	mov	$(BP + 0x2d0), %di
	xor	%bp, %bp
	push	%ebx
	xor	%ebx, %ebx
1:	mov	$0xe820, %eax
	mov	$20, %ecx
	mov	$SMAP, %edx
	int	$0x15
	jc	2f
	cmp	$SMAP, %eax
	jne	2f
	add	$20, %di
	inc	%bp
	test	%ebx, %ebx
	jz	2f
	cmp	$128, %bp
	jb	1b
2:	pop	%ebx
	mov	%bp, %ax
	mov	%al, BP + 0x1e8

	/* PML4[0] -> PDPT[0] -> PD: 512 x 2 MiB, U/S=1 everywhere (PVM). */
	lea	PDPT + 7(%ebx), %eax
	mov	%eax, PML4
	lea	PD + 7(%ebx), %eax
	mov	%eax, PDPT
	mov	$PD, %di
	mov	$0x87, %eax
	mov	$512, %cx
3:	mov	%eax, (%di)
	add	$0x200000, %eax
	add	$8, %di
	loop	3b

	/* Patch linear addresses into the GDT pointer and far-jump targets. */
	lea	gdt(%ebx), %eax
	mov	%eax, gdt_ptr + 2
	lea	pm32(%ebx), %eax
	mov	%eax, jmp32
	lea	lm64(%ebx), %eax
	mov	%eax, jmp64

	lgdtl	gdt_ptr
	mov	%cr0, %eax
	or	$1, %eax
	mov	%eax, %cr0
	ljmpl	*jmp32

	.code32
pm32:
	mov	$SEL_DATA, %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %ss
	mov	%cr4, %eax
	or	$0x20, %eax		/* PAE */
	mov	%eax, %cr4
	lea	PML4(%ebx), %eax
	mov	%eax, %cr3
	mov	$0xc0000080, %ecx	/* EFER.LME */
	rdmsr
	or	$0x100, %eax
	wrmsr
	mov	%cr0, %eax
	or	$0x80000000, %eax	/* PG */
	mov	%eax, %cr0
	ljmp	*jmp64(%ebx)

	.code64
lm64:
	lea	BP(%rbx), %rsi
	mov	$(LOAD_ADDR + 0x200), %eax
	jmp	*%rax

	.balign 8
gdt:
	.quad	0
	.quad	0x00af9b000000ffff	/* SEL_CODE64 */
	.quad	0x00cf93000000ffff	/* SEL_DATA */
	.quad	0x00cf9b000000ffff	/* SEL_CODE32 */
gdt_ptr:
	.word	gdt_ptr - gdt - 1
	.long	0
jmp32:	.long	0
	.word	SEL_CODE32
jmp64:	.long	0
	.word	SEL_CODE64
