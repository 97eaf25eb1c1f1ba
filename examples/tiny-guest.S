/*
 * tiny-guest: the smallest guest that proves a VMM started it. Entered through PVH (32-bit
 * protected mode, paging off, flat segments), it writes the byte '!' (0x21) to the COM1 data
 * port, then the same byte to the debug-exit port 0xf4 (minivmm exits with status 33, QEMU's
 * isa-debug-exit with (33 << 1) | 1 = 67). Four instructions do the work; the last two only
 * catch a VMM without an exit port.
 * The same bytes are embedded in examples/startup-floor.c (tests/integration/test_startup.sh
 * checks that they match).
 */
	.code32
	.section .text, "ax"
	.globl	pvh_entry
pvh_entry:
	movw	$0x3f8, %dx	/* COM1 data */
	movb	$0x21, %al	/* '!' */
	outb	%al, %dx	/* the first serial byte */
	outb	%al, $0xf4	/* debug exit: a status the scripts can tell from "no exit" */
1:	hlt
	jmp	1b

/* XEN_ELFNOTE_PHYS32_ENTRY: tells PVH loaders (minivmm, QEMU) the 32-bit entry. */
	.section .note.Xen, "a", @note
	.balign	4
	.long	4
	.long	4
	.long	18
	.asciz	"Xen"
	.long	pvh_entry
