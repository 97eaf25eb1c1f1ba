/* Minimal formatted output to the serial port. */
#ifndef PRINTF_H
#define PRINTF_H

#include <stdarg.h>
#include <stddef.h>

/* Supports %s %c %d %u %x %% with optional 0-padding width and l/ll modifiers. */
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
