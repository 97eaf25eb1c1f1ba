/* Threads that the lower layers start (blk workers, pre-faulting, console input and output) narrow
 * their own system calls through a hook the VMM sets once its process-wide filter is on
 * (vmm/sandbox/seccomp.c). Those threads may start before that filter exists (a thread's own filter
 * would make the process filter's thread synchronisation fail), so each narrows itself the
 * next time it is about to handle input. Without a hook (--seccomp off, unit tests) nothing
 * happens. */
#ifndef MINIVMM_THREAD_SANDBOX_H
#define MINIVMM_THREAD_SANDBOX_H

enum sandbox_thread {
	SANDBOX_BLK_WORKER,  /* runs the guest's disk requests (no io_uring) */
	SANDBOX_CONSOLE_IN,  /* feeds the host's console input to the UART or hvc0 */
	SANDBOX_CONSOLE_OUT, /* writes the virtio console's output (the console input's filter) */
	SANDBOX_POPULATE,    /* pre-faults guest RAM */
};

/* Installs the calling thread's filter for its role: 0, or -1 (logged by the hook). */
typedef int (*sandbox_narrow_fn)(enum sandbox_thread thread);

void thread_sandbox_set_hook(sandbox_narrow_fn fn);

/* Before handling input: narrow the calling thread as `thread` once the hook is set (once per
 * thread). Returns 0, or -1 when the filter could not be installed: the thread must then not
 * handle the input. */
int thread_sandbox_narrow(enum sandbox_thread thread);

#endif
