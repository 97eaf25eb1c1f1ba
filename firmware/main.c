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
#include "test_balloon.h"
#include "test_blk.h"
#include "test_blk_reset.h"
#include "test_boot.h"
#include "test_console.h"
#include "test_counter.h"
#include "test_demo.h"
#include "test_fs.h"
#include "test_hostile.h"
#include "test_net.h"
#include "test_outcomes.h"
#include "test_rng.h"
#include "test_virtio_bench.h"
#include "traps.h"
#include "x86.h"

void fw_main(uint32_t protocol, uint64_t info);

/* test=NAME runs this; NULL on success, else the FAIL reason (some never return). */
static const struct {
	const char *name;
	const char *(*run)(void);
} tests[] = {
    {"boot", test_boot},
    {"counter", test_counter},
    {"demo", test_demo},
    {"exit", test_exit},
    {"reset", test_reset},
    {"triple-fault", test_triple_fault},
    {"balloon", test_balloon},
    {"rng", test_rng},
    {"hostile", test_hostile},
    {"blk", test_blk},
    {"blk-durable", test_blk_durable},
    {"blk-reset", test_blk_reset},
    {"fs", test_fs},
    {"console", test_console},
    {"serve", test_serve},
    {"udp_sink", test_udp_sink},
    {"udp_stream", test_udp_stream},
    {"udp_rr", test_udp_rr},
    {"pktgen", test_pktgen},
    {"bulk_send", test_bulk_send},
    {"bulk_recv", test_bulk_recv},
    {"tcp_stream", test_tcp_stream},
    {"tcp_sink", test_tcp_sink},
    {"tcp_rr", test_tcp_rr},
    {"tcp_crr", test_tcp_crr},
    {"virtio-bench", test_virtio_bench},
};

static const char *run_test(const char *name, size_t n)
{
	for (unsigned i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (strlen(tests[i].name) == n && !memcmp(tests[i].name, name, n))
			return tests[i].run();
	return "unknown test";
}

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
	if (cmdline_get(boot_info.cmdline, "test", &test, &n) && (err = run_test(test, n)))
		probe_fail(err);
	/* hold=serial: lets a test inspect the running VM (all vCPUs have run by now). */
	if (cmdline_get(boot_info.cmdline, "hold", &hold, &n)) {
		if (n != 6 || memcmp(hold, "serial", 6))
			probe_fail("unknown hold");
		kprintf("probe: holding\n");
		serial_getc();
	}
	probe_pass();
}
