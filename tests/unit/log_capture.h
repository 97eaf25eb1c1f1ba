/* Log lines in the unit tests: from the start of every test they are kept here instead of
 * cluttering stderr (tests feed bad input on purpose), so a test can assert on them.
 * MINIVMM_TEST_LOG=1 prints them on stderr as well. */
#ifndef MINIVMM_TEST_LOG_CAPTURE_H
#define MINIVMM_TEST_LOG_CAPTURE_H

/* Every line logged since the process started or the last log_capture_clear(), each ending
 * in a newline (a copy: free() it). Keeps the first 64 KiB. */
char *log_captured(void);
void log_capture_clear(void);

#endif
