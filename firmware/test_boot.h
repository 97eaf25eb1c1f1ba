/* test=boot: check what the VMM handed over and measure the CPU. */
#ifndef TEST_BOOT_H
#define TEST_BOOT_H

#include "pvm.h"

/* Prints the result lines; returns NULL on success or the FAIL reason. */
const char *test_boot(enum exec_mode mode);

#endif
