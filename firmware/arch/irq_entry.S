/*
 * Interrupt entry for the device vectors, and the halt that waits for them. The CPU frame
 * has no error code here; irq_dispatch() gets the vector and the address of the saved RIP.
 */
	.text

.macro IRQ vec
	.balign 16
	pushq	$\vec
	jmp	irq_common
.endm

	.balign 16
	.globl irq_stubs
irq_stubs:
	.irp v, 0x20,0x21,0x22,0x23,0x24,0x25,0x26,0x27,0x28,0x29,0x2a,0x2b,0x2c,0x2d,0x2e,0x2f
	IRQ \v
	.endr
	.irp v, 0x30,0x31,0x32,0x33,0x34,0x35,0x36,0x37,0x38,0x39,0x3a,0x3b,0x3c,0x3d,0x3e,0x3f
	IRQ \v
	.endr
	.irp v, 0x40,0x41,0x42,0x43,0x44,0x45,0x46,0x47,0x48,0x49,0x4a,0x4b,0x4c,0x4d,0x4e,0x4f
	IRQ \v
	.endr

/* Caller-saved registers only (irq_dispatch is C); the stack is realigned for the call. */
irq_common:
	push	%rax
	push	%rcx
	push	%rdx
	push	%rsi
	push	%rdi
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	push	%rbx
	mov	80(%rsp), %rdi		/* the vector */
	lea	88(%rsp), %rsi		/* the saved RIP */
	mov	%rsp, %rbx
	and	$-16, %rsp
	call	irq_dispatch
	mov	%rbx, %rsp
	pop	%rbx
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rdx
	pop	%rcx
	pop	%rax
	add	$8, %rsp
	iretq

/* The APIC's spurious vector: no EOI. */
	.balign 16
	.globl irq_spurious
irq_spurious:
	iretq

/*
 * Enable, then halt. An interrupt taken anywhere in [irq_wait_begin, irq_wait_hlt] (on PVM
 * the window between if_ = 1 and hlt is not atomic) has irq_dispatch() move its return
 * address past the hlt, so a wake-up is never slept through.
 */
	.globl irq_wait_native, irq_wait_pvm, irq_wait_begin, irq_wait_hlt
irq_wait_native:
	sti				/* its one-instruction shadow covers the hlt */
	hlt
	ret
irq_wait_pvm:
irq_wait_begin:
	movb	$1, (%rdi)		/* vif->if_ */
	cmpb	$0, 1(%rdi)		/* vif->pending */
	je	irq_wait_hlt
	out	%al, $0x80		/* any trapping instruction delivers the pending one */
irq_wait_hlt:
	hlt
	ret
