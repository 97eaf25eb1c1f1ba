/* The host side of the guest's console (COM1, and hvc0 with --console virtio): stdout/stdin
 * (raw mode on a terminal), a file, or nothing; on a terminal the guest's output is filtered by
 * default (console_filter.h). */
#ifndef MINIVMM_CONSOLE_H
#define MINIVMM_CONSOLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "console_filter.h"

struct console {
	/* Output from COM1 (a vCPU) and from the virtio console's queue (its own thread):
	 * out_bytes, out_capped, filt and the writes themselves. */
	pthread_mutex_t out_lock;
	int out_fd; /* -1: discard */
	int in_fd;  /* -1: no input */
	bool owns_out;
	/* A file console: what was written, the cap (0: none), whether the cap was logged. */
	uint64_t out_bytes, out_max;
	bool out_capped;
	/* Output goes through filt (console_filter.h): --console stdio,filter=on, or by default
	 * when the output is a terminal. */
	bool filter;
	struct console_filter filt;
	bool raw_tty;
	pthread_t input_thread;
	bool input_running;
	int wake_fd; /* eventfd that stops the input thread */
	/* Input goes to deliver(deliver_opaque, ...): COM1, or hvc0 when a virtio console took
	 * it (console_take_input); Ctrl-A x calls quit(opaque). */
	unsigned (*deliver)(void *opaque, const uint8_t *buf, unsigned len);
	void *deliver_opaque;
	void (*quit)(void *opaque);
	void *opaque;
	bool escape; /* Ctrl-A seen */
};

/* Returns 0 or -1 (logged). Puts a terminal in raw mode; console_close restores it. */
int console_open(struct console *c, const struct vm_config *cfg);
/* Start forwarding input (after deliver/quit/opaque are set). */
int console_start_input(struct console *c);
void console_write(struct console *c, uint8_t byte);
/* The same for len bytes (blocks while the output does: the virtio console's queue thread). */
void console_write_buf(struct console *c, const uint8_t *buf, size_t len);
/* Input goes to deliver from now on (before console_start_input); false when something else
 * took it already. */
bool console_take_input(struct console *c, unsigned (*deliver)(void *, const uint8_t *, unsigned),
			void *opaque);
/* Stop forwarding input (before what it goes to is destroyed). */
void console_stop_input(struct console *c);
void console_close(struct console *c);
/* Put a terminal the console made raw back as it was; async-signal-safe (fatal paths). */
void console_restore_terminal(void);

#endif
