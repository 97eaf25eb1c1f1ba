/* Ending a probe run: the last result line, then the VMM's exit port. */
#ifndef EXIT_H
#define EXIT_H

void probe_pass(void) __attribute__((noreturn));
void probe_fail(const char *reason) __attribute__((noreturn));

#endif
