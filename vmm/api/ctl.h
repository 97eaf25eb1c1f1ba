/* `minivmm ctl --sock PATH COMMAND [ARGS]`: a client for the control socket (vmm/api/api.h). */
#ifndef MINIVMM_CTL_H
#define MINIVMM_CTL_H

/* argv[0] is "ctl". Prints the response line. Exit status: 0 on "ok":true, 1 on "ok":false,
 * 2 on a usage error or when the VMM cannot be reached. */
int ctl_main(int argc, char **argv);

#endif
