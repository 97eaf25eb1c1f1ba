/* The few libc routines the probe needs (GCC may also emit calls to mem*). */
#ifndef LIB_H
#define LIB_H

#include <stddef.h>

void *memset(void *s, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

#endif
