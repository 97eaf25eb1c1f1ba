/* test=console: a known byte stream written through a virtio console port, its CRC-32 and rate. */
#ifndef TEST_CONSOLE_H
#define TEST_CONSOLE_H

#include <stdint.h>

const char *test_console(void);
/* The stream's next byte: a 32-bit LCG (Numerical Recipes') from console.seed, its top byte. */
static inline uint8_t console_pattern_next(uint32_t *state)
{
	*state = *state * 1664525u + 1013904223u;
	return (uint8_t)(*state >> 24);
}

#endif
