/* Tests that end the VM in a particular way, so the VMM's exit paths can be checked. */
#ifndef TEST_OUTCOMES_H
#define TEST_OUTCOMES_H

#include <stddef.h>

/* Runs test=exit|reset|triple-fault (never returns); returns only for other names. */
void test_outcome(const char *name, size_t len);

#endif
