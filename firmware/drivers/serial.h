/* COM1 8250 output, polled. Every port access is a VM exit: callers should be terse. */
#ifndef SERIAL_H
#define SERIAL_H

#include <stddef.h>

void serial_init(void);
void serial_write(const char *s, size_t n);
/* Waits (unbounded) for one received byte. */
char serial_getc(void);

#endif
