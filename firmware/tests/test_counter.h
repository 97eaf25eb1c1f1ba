/* test=counter: a guest whose progress and memory can be checked across a snapshot. */
#ifndef TEST_COUNTER_H
#define TEST_COUNTER_H

const char *test_counter(void);

#endif
