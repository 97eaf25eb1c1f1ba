/* Constants shared by the probe's C and assembly sources. */
#ifndef PROBE_H
#define PROBE_H

#define LOAD_ADDR 0x100000 /* linked and loaded here, identity mapped */

/* Selectors in the probe's own GDT (start.S); the IDT gates name SEL_CODE64. */
#define SEL_CODE64 0x08
#define SEL_DATA   0x10
#define SEL_CODE32 0x18

/* How the probe was entered: first argument of fw_main(). */
#define BOOT_PVH     1
#define BOOT_LINUX64 2

#define MAX_CPUS	32
#define AP_STACK_SIZE	8192
#define TRAMPOLINE_ADDR 0x8000 /* AP real-mode entry: SIPI vector 0x08 */

#endif
