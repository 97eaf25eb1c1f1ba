/* `minivmm run`: one command in a VM, on the host's own files, its exit status back (issue 38,
 * docs/run.md). */
#ifndef MINIVMM_RUN_H
#define MINIVMM_RUN_H

#include <stdint.h>

/* argv[0] is "run". The command's exit status, 124 on --timeout, 125 when the VM ended before
 * the command did, 2 for a usage or set-up error. */
int run_main(int argc, char **argv, int64_t main_ns);

#endif
