/* The words the seccomp policy is written in (seccomp_rules.h), compiled ahead
 * (seccomp_aot.h) and installed (seccomp.h): the threads' roles and what the configured devices
 * need. Types only, so that those three include this and not each other. */
#ifndef MINIVMM_SECCOMP_ROLES_H
#define MINIVMM_SECCOMP_ROLES_H

#include <stdbool.h>

/* What the configured devices and options need from the host while the guest runs. */
struct seccomp_needs {
	bool user_net;	     /* --net user: libslirp's sockets */
	bool tap;	     /* --net tap=: TUNSETOFFLOAD when the guest changes offloads */
	bool io_uring;	     /* a disk on io_uring: io_uring_enter */
	bool control_socket; /* --api-sock: accept/send/recv, and its removal at exit */
	bool vhost_user;     /* a vhost-user back end: its socket's messages, shared RAM */
};

/* The descriptors vhost-user back ends' sockets are moved to (vhost_user_move_fd) so that the
 * filters can name them: sendmsg, the one call that passes descriptors out, works on these only.
 * BASE is a multiple of FDS, a power of two: one masked compare matches them all. */
#define SECCOMP_VHOST_USER_FD_BASE 1000
#define SECCOMP_VHOST_USER_FDS	   8

/* Which filter. SECCOMP_PROCESS goes on every thread at once, before the VMM starts its
 * threads: the union of the roles below, plus what starting a thread and installing its own
 * filter take. Each role's filter then narrows its own thread (filters stack: a call must pass
 * both) before it handles any input. */
enum seccomp_role {
	SECCOMP_PROCESS,
	SECCOMP_MAIN,	    /* waits for the outcome, tears down */
	SECCOMP_VCPU,	    /* KVM_RUN and the device registers a vCPU exit reaches */
	SECCOMP_IO,	    /* the event loop: virtqueues, tap, libslirp, the control socket */
	SECCOMP_BLK_WORKER, /* a disk's requests without io_uring: preadv, pwritev, fdatasync... */
	SECCOMP_CONSOLE_IN, /* console input: read, poll, KVM_IRQ_LINE; hvc0's output: write */
	SECCOMP_POPULATE,   /* pre-faulting guest RAM: madvise */
};

#endif
