/*
 * test=exit (exit.status=N to port 0xf4), test=reset (i8042 pulse), test=triple-fault
 * (exception with an empty IDT). Each ends the VM; the VMM's tests check its exit status.
 */
#include <stdint.h>

#include "boot_info.h"
#include "cmdline.h"
#include "exit.h"
#include "lib.h"
#include "printf.h"
#include "test_outcomes.h"
#include "x86.h"

#define EXIT_PORT   0xf4
#define I8042_CMD   0x64
#define I8042_PULSE 0xfe /* pulse the reset line */

static void __attribute__((noreturn)) halt(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}

const char *test_exit(void)
{
	const char *v;
	size_t n;
	uint64_t status = 0;
	if (cmdline_get(boot_info.cmdline, "exit.status", &v, &n) &&
	    (!parse_u64(v, n, false, &status) || status > 255))
		probe_fail("bad exit.status");
	kprintf("probe: exit status=%lu\n", status);
	outb(EXIT_PORT, (uint8_t)status);
	halt();
}

const char *test_reset(void)
{
	kprintf("probe: reset\n");
	outb(I8042_CMD, I8042_PULSE);
	halt();
}

const char *test_triple_fault(void)
{
	kprintf("probe: triple fault\n");
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) empty = {0, 0};
	/* Every exception now faults again: #UD -> #GP -> #DF -> shutdown. */
	__asm__ volatile("lidt %0; ud2" : : "m"(empty));
	halt();
}
