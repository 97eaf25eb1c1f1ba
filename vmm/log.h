/* Diagnostics on stderr, prefixed with the program name. */
#ifndef MINIVMM_LOG_H
#define MINIVMM_LOG_H

#include <stdbool.h>

void log_set_quiet(bool quiet);
bool log_is_quiet(void);
/* Informational line; suppressed by --quiet. */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
