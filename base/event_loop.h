/* The I/O thread: an epoll loop with fd handlers, timers (timerfd) and bottom halves.
 * Device work runs here, never on vCPU threads. */
#ifndef MINIVMM_EVENT_LOOP_H
#define MINIVMM_EVENT_LOOP_H

#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/adaptive_poll.h"

typedef void (*event_fd_fn)(void *opaque, uint32_t events);
typedef void (*event_cb_fn)(void *opaque);

/* A registered fd (and the record epoll points to). */
struct event_source {
	int fd;
	event_fd_fn fn;
	void *opaque;
};

/* A registered fd whose watched events more than one thread changes, a bit each (a backend's
 * EPOLLIN turned on by a vCPU thread while the loop thread turns its EPOLLOUT off): each change
 * reads and writes the mask and the epoll registration under one lock, so none is lost and
 * epoll always has the mask. Once removed, changes do nothing. */
struct event_watch {
	struct event_source src;
	struct event_loop *loop;
	pthread_mutex_t lock;
	uint32_t events; /* what epoll has */
	bool added;
};

/* A callback scheduled to run once, later in the current (or next) loop iteration. Scheduling
 * an already scheduled bottom half does nothing. */
struct bottom_half {
	event_cb_fn fn;
	void *opaque;
	bool scheduled;
	struct bottom_half *next;
};

/* A one-shot timer backed by a timerfd. */
struct event_timer {
	struct event_source src;
	event_cb_fn fn;
	void *opaque;
	bool armed;
};

/* A device's rings, polled before the loop sleeps when polling is on (adaptive_poll.h): the loop
 * spins on poll() for up to its window instead of sleeping at once, so the guest's buffers are
 * seen without its notifications, which begin() asks it to stop sending. All on the loop thread.
 * A poller is added before the loop runs (device creation) and removed after it stopped. */
struct event_poller {
	/* A poll phase starts (the loop was about to sleep): ask the guest not to notify. */
	void (*begin)(void *opaque);
	/* Cheap, no system call: is there work? If so, schedule it (a bottom half) and say true;
	 * the loop then serves its fds and runs the bottom halves before it polls again. */
	bool (*poll)(void *opaque);
	/* Polling ends: the loop will sleep. Notifications back on, then look once more: work
	 * added before the guest saw them on would get no notification, so schedule it and say
	 * true (the loop then does not sleep). */
	bool (*end)(void *opaque);
	void *opaque;
	uint64_t max_ns; /* this poller's bound; the loop polls for the largest */
	struct event_poller *next;
};

struct event_loop {
	int epoll_fd;
	int wake_fd; /* eventfd: cross-thread bottom-half scheduling and stop */
	struct event_source wake_src;
	pthread_mutex_t bh_lock;
	struct bottom_half *bh_head, *bh_tail;
	pthread_t thread;
	pid_t tid;
	sem_t started;
	bool pinned, start_failed;
	int (*on_start)(void *opaque); /* run on the new thread before its first event */
	void *on_start_opaque;
	cpu_set_t pin;
	bool running;
	volatile bool stop;
	uint64_t iterations;
	/* Adaptive polling: off (poll.max_ns 0) until a poller is added. */
	struct event_poller *pollers;
	struct adaptive_poll poll;
	bool polling; /* between the pollers' begin and end */
};

int event_loop_init(struct event_loop *loop);
void event_loop_destroy(struct event_loop *loop);
/* Watch fd for events (EPOLLIN etc.); src must live until removed. Returns 0 or -1. */
int event_loop_add_fd(struct event_loop *loop, struct event_source *src, int fd, uint32_t events,
		      event_fd_fn fn, void *opaque);
int event_loop_mod_fd(struct event_loop *loop, struct event_source *src, uint32_t events);
void event_loop_del_fd(struct event_loop *loop, struct event_source *src);

/* A watch of nothing yet, on loop; event_watch_destroy frees it. */
void event_watch_init(struct event_watch *w, struct event_loop *loop);
/* Watch fd for events through w (which must live until event_watch_destroy). Returns 0 or -1
 * (logged; w is then not added). */
int event_watch_add(struct event_watch *w, int fd, uint32_t events, event_fd_fn fn, void *opaque);
/* Turn the bits of set on and those of clear off, atomically with respect to other changes (a
 * call that would change nothing takes no lock). */
void event_watch_change(struct event_watch *w, uint32_t set, uint32_t clear);
/* The mask epoll has now (0 once removed). */
uint32_t event_watch_events(struct event_watch *w);
/* Stop watching; true for the call that removed it (the first). Any thread. */
bool event_watch_remove(struct event_watch *w);
/* Removes it if still added, and frees the lock. */
void event_watch_destroy(struct event_watch *w);

/* Poll p's rings before sleeping, for up to p->max_ns (the loop's bound is the largest). */
void event_loop_add_poller(struct event_loop *loop, struct event_poller *p);
/* Remove p (its end() is not called: the loop is stopped). */
void event_loop_del_poller(struct event_loop *loop, struct event_poller *p);

void bottom_half_init(struct bottom_half *bh, event_cb_fn fn, void *opaque);
/* Thread-safe. From the loop thread the bottom half runs before the loop sleeps again. */
void bottom_half_schedule(struct event_loop *loop, struct bottom_half *bh);

int event_timer_init(struct event_loop *loop, struct event_timer *t, event_cb_fn fn, void *opaque);
/* (Re)arm to fire once after ns nanoseconds. Loop thread only. */
void event_timer_arm(struct event_timer *t, uint64_t ns);
void event_timer_cancel(struct event_timer *t);
void event_timer_destroy(struct event_loop *loop, struct event_timer *t);

/* Run the loop on a new thread, pinned to cpus when given. on_start (may be NULL) runs on that
 * thread before it handles any event (its seccomp filter); when it fails (returns -1, logged)
 * the thread ends. Returns 0 or -1 (logged). */
int event_loop_start(struct event_loop *loop, const cpu_set_t *cpus, int (*on_start)(void *),
		     void *opaque);
/* From another thread, with the loop running: wait (at most timeout_ms) until it has handled
 * what was ready when this was called (the events of the pass that picks up this call's wake-up,
 * then its bottom halves). 0, or -1 on timeout. */
int event_loop_flush(struct event_loop *loop, int timeout_ms);
/* Stop and join the thread. */
void event_loop_stop(struct event_loop *loop);
/* Run one iteration on the calling thread (unit tests); timeout_ms as for epoll_wait. */
int event_loop_run_once(struct event_loop *loop, int timeout_ms);
/* Whether the caller is the loop's thread (or, before event_loop_start, any thread: the one
 * that drives it with event_loop_run_once). No system call. */
bool event_loop_on_thread(const struct event_loop *loop);

#endif
