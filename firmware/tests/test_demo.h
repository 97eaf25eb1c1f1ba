/* test=demo: one boot that shows what the probe can do (make demo). */
#ifndef TEST_DEMO_H
#define TEST_DEMO_H

/* Prints the result lines and a summary; returns NULL on success or the FAIL reason. */
const char *test_demo(void);

#endif
