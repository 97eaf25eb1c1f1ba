/* TSC frequency discovery. */
#ifndef TSC_H
#define TSC_H

#include <stdint.h>

/* TSC kHz from PVM's MSR, CPUID 0x40000010, CPUID 0x15/0x16, else the PIT; 0 if unknown. */
uint32_t tsc_khz(void);

#endif
