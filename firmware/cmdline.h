/* key=value parameters on the command line. */
#ifndef CMDLINE_H
#define CMDLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Finds the last "key=value" word; val and len describe the value. */
bool cmdline_get(const char *cmdline, const char *key, const char **val, size_t *len);
/* Decimal with optional K/M/G (binary) suffix when suffix is true. */
bool parse_u64(const char *s, size_t len, bool suffix, uint64_t *out);
bool parse_hex32(const char *s, size_t len, uint32_t *out);

#endif
