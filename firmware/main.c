/* The probe: report how it was booted and what it found (output contract: the VMM's tests). */
#include "boot_info.h"
#include "cmdline.h"
#include "exit.h"
#include "lib.h"
#include "paging.h"
#include "printf.h"
#include "probe.h"
#include "pvm.h"
#include "serial.h"
#include "test_blk.h"
#include "test_balloon.h"
#include "test_boot.h"
#include "test_demo.h"
#include "test_net.h"
#include "test_outcomes.h"
#include "test_rng.h"
#include "test_virtio_bench.h"
#include "traps.h"
#include "x86.h"

void fw_main(uint32_t protocol, uint64_t info);

static const char *report_e820(void)
{
	uint64_t ram = 0;
	for (unsigned i = 0; i < boot_info.e820_count; i++)
		if (boot_info.e820[i].type == E820_RAM)
			ram += boot_info.e820[i].size;
	const char *err = ram ? 0 : "no RAM in e820";
	kprintf("probe: e820 entries=%u ram=%lu %s\n", boot_info.e820_count, ram,
		err ? "FAIL" : "ok");
	return err;
}

/*
 * Called once by start.S on the BSP: stack, GDT, page tables and .bss are ready, and
 * pvm_probe() has run (so on PVM all of this runs natively).
 */
void fw_main(uint32_t protocol, uint64_t info)
{
	idt_init();
	const char *err = boot_info_copy((int)protocol, info);
	if (!err)
		paging_map_high_ram();
	serial_init();
	kprintf("minivmm probe v1\n");
	kprintf("probe: boot protocol=%s\n", protocol == BOOT_PVH ? "pvh" : "linux64");
	enum exec_mode mode = exec_mode();
	uint16_t cs = read_cs();
	kprintf("probe: mode=%s cs=0x%02x\n", exec_mode_name(mode), cs);
	serial_write("probe: cmdline=\"", strlen("probe: cmdline=\""));
	serial_write(boot_info.cmdline, boot_info.cmdline_len);
	serial_write("\"\n", 2);
	if (err)
		probe_fail(err);
	if (mode == MODE_NATIVE_PVM && (cs & 3) != 3)
		probe_fail("pvm opt-in did not take effect (cs rpl != 3)");
	if ((err = report_e820()))
		probe_fail(err);

	const char *test, *hold;
	size_t n;
	if (cmdline_get(boot_info.cmdline, "test", &test, &n)) {
		test_outcome(test, n); /* returns unless it is one of those */
		if (n == 4 && !memcmp(test, "boot", 4))
			err = test_boot(mode);
		else if (n == 4 && !memcmp(test, "demo", 4))
			err = test_demo(mode);
		else if (n == 7 && !memcmp(test, "balloon", 7))
			err = test_balloon();
		else if (n == 3 && !memcmp(test, "rng", 3))
			err = test_rng();
		else if (n == 7 && !memcmp(test, "hostile", 7))
			err = test_hostile();
		else if (test_blk_known(test, n))
			err = test_blk(test, n);
		else if (test_net_known(test, n))
			err = test_net(test, n);
		else if (n == 12 && !memcmp(test, "virtio-bench", 12))
			err = test_virtio_bench();
		else
			err = "unknown test";
		if (err)
			probe_fail(err);
	}
	/* hold=serial: lets a test inspect the running VM (all vCPUs have run by now). */
	if (cmdline_get(boot_info.cmdline, "hold", &hold, &n)) {
		if (n != 6 || memcmp(hold, "serial", 6))
			probe_fail("unknown hold");
		kprintf("probe: holding\n");
		serial_getc();
	}
	probe_pass();
}
