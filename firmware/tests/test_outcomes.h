/* Tests that end the VM in a particular way, so the VMM's exit paths can be checked. */
#ifndef TEST_OUTCOMES_H
#define TEST_OUTCOMES_H

/* test=exit|reset|triple-fault: never return. */
const char *test_exit(void);
const char *test_reset(void);
const char *test_triple_fault(void);

#endif
