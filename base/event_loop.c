#include "event_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"

#define MAX_EVENTS 64

static void drain_eventfd(int fd)
{
	uint64_t v;
	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

static void wake_handler(void *opaque, uint32_t events)
{
	(void)events;
	drain_eventfd(((struct event_loop *)opaque)->wake_fd);
}

static void wake(struct event_loop *loop)
{
	uint64_t one = 1;
	if (write(loop->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("event loop wake-up failed: %s", strerror(errno));
}

int event_loop_init(struct event_loop *loop)
{
	memset(loop, 0, sizeof(*loop));
	loop->wake_fd = -1;
	pthread_mutex_init(&loop->bh_lock, NULL);
	loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epoll_fd < 0) {
		log_error("epoll_create1: %s", strerror(errno));
		return -1;
	}
	loop->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (loop->wake_fd < 0) {
		log_error("eventfd: %s", strerror(errno));
		return -1;
	}
	return event_loop_add_fd(loop, &loop->wake_src, loop->wake_fd, EPOLLIN, wake_handler, loop);
}

void event_loop_destroy(struct event_loop *loop)
{
	if (loop->wake_fd >= 0)
		close(loop->wake_fd);
	if (loop->epoll_fd >= 0)
		close(loop->epoll_fd);
	loop->wake_fd = loop->epoll_fd = -1;
	pthread_mutex_destroy(&loop->bh_lock);
}

int event_loop_add_fd(struct event_loop *loop, struct event_source *src, int fd, uint32_t events,
		      event_fd_fn fn, void *opaque)
{
	src->fd = fd;
	src->fn = fn;
	src->opaque = opaque;
	struct epoll_event ev = {.events = events, .data.ptr = src};
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		log_error("epoll_ctl add fd %d: %s", fd, strerror(errno));
		return -1;
	}
	return 0;
}

int event_loop_mod_fd(struct event_loop *loop, struct event_source *src, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = src};
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_MOD, src->fd, &ev) < 0) {
		log_error("epoll_ctl mod fd %d: %s", src->fd, strerror(errno));
		return -1;
	}
	return 0;
}

void event_loop_del_fd(struct event_loop *loop, struct event_source *src)
{
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, src->fd, NULL);
}

void event_watch_init(struct event_watch *w, struct event_loop *loop)
{
	*w = (struct event_watch){.loop = loop, .src = {.fd = -1}};
	pthread_mutex_init(&w->lock, NULL);
}

int event_watch_add(struct event_watch *w, int fd, uint32_t events, event_fd_fn fn, void *opaque)
{
	pthread_mutex_lock(&w->lock);
	int rc = -1;
	if (!w->added && event_loop_add_fd(w->loop, &w->src, fd, events, fn, opaque) == 0) {
		__atomic_store_n(&w->events, events, __ATOMIC_RELEASE);
		w->added = true;
		rc = 0;
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void event_watch_change(struct event_watch *w, uint32_t set, uint32_t clear)
{
	/* Already as asked: the change, made at the moment of this load (the mask is stored
	 * after epoll has it), would change nothing, so it needs no lock. The receive path asks
	 * once per batch, nearly always for no change. */
	uint32_t cur = __atomic_load_n(&w->events, __ATOMIC_ACQUIRE);
	if ((cur & set) == set && !(cur & clear))
		return;
	pthread_mutex_lock(&w->lock);
	uint32_t events = (w->events | set) & ~clear;
	if (w->added && events != w->events && event_loop_mod_fd(w->loop, &w->src, events) == 0)
		__atomic_store_n(&w->events, events, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&w->lock);
}

uint32_t event_watch_events(struct event_watch *w)
{
	pthread_mutex_lock(&w->lock);
	uint32_t events = w->events;
	pthread_mutex_unlock(&w->lock);
	return events;
}

bool event_watch_remove(struct event_watch *w)
{
	pthread_mutex_lock(&w->lock);
	bool was = w->added;
	if (was)
		event_loop_del_fd(w->loop, &w->src);
	w->added = false;
	__atomic_store_n(&w->events, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&w->lock);
	return was;
}

void event_watch_destroy(struct event_watch *w)
{
	event_watch_remove(w);
	pthread_mutex_destroy(&w->lock);
}

void bottom_half_init(struct bottom_half *bh, event_cb_fn fn, void *opaque)
{
	*bh = (struct bottom_half){.fn = fn, .opaque = opaque};
}

bool event_loop_on_thread(const struct event_loop *loop)
{
	/* running is set once the thread has started (before any other thread may call). */
	return !loop->running || pthread_equal(pthread_self(), loop->thread);
}

void bottom_half_schedule(struct event_loop *loop, struct bottom_half *bh)
{
	pthread_mutex_lock(&loop->bh_lock);
	bool queued = bh->scheduled;
	if (!queued) {
		bh->scheduled = true;
		bh->next = NULL;
		if (loop->bh_tail)
			loop->bh_tail->next = bh;
		else
			loop->bh_head = bh;
		loop->bh_tail = bh;
	}
	pthread_mutex_unlock(&loop->bh_lock);
	/* The loop thread runs pending bottom halves before sleeping; others must wake it. */
	if (!queued && syscall(SYS_gettid) != loop->tid)
		wake(loop);
}

/* A flush's round trip: heap-allocated, so one the caller stopped waiting for can still run. */
struct flush {
	struct bottom_half bh;
	int fd;
	int refs; /* the caller's and the bottom half's (__atomic) */
};

static void flush_put(struct flush *f)
{
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		close(f->fd);
		free(f);
	}
}

static void flush_reached(void *opaque)
{
	struct flush *f = opaque;
	uint64_t one = 1;
	if (write(f->fd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only on overflow */
	}
	flush_put(f);
}

int event_loop_flush(struct event_loop *loop, int timeout_ms)
{
	struct flush *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->fd = eventfd(0, EFD_CLOEXEC);
	if (f->fd < 0) {
		free(f);
		return -1;
	}
	f->refs = 2;
	bottom_half_init(&f->bh, flush_reached, f);
	bottom_half_schedule(loop, &f->bh);
	struct pollfd p = {.fd = f->fd, .events = POLLIN};
	int rc = poll(&p, 1, timeout_ms) == 1 ? 0 : -1;
	flush_put(f);
	return rc;
}

/* Run the bottom halves queued now; ones they schedule run in the next pass, so a bottom half
 * that always reschedules itself cannot starve fd handlers. Each one's next pointer is read
 * before it is marked unscheduled: from then on, scheduling it again links it into the new list
 * and must not cut this one short. */
static bool run_bottom_halves(struct event_loop *loop)
{
	pthread_mutex_lock(&loop->bh_lock);
	struct bottom_half *list = loop->bh_head;
	loop->bh_head = loop->bh_tail = NULL;
	pthread_mutex_unlock(&loop->bh_lock);
	bool ran = list != NULL;
	while (list) {
		struct bottom_half *bh = list;
		pthread_mutex_lock(&loop->bh_lock);
		list = bh->next;
		bh->next = NULL;
		bh->scheduled = false;
		pthread_mutex_unlock(&loop->bh_lock);
		bh->fn(bh->opaque);
	}
	return ran;
}

static bool bottom_halves_pending(struct event_loop *loop)
{
	pthread_mutex_lock(&loop->bh_lock);
	bool pending = loop->bh_head != NULL;
	pthread_mutex_unlock(&loop->bh_lock);
	return pending;
}

static void timer_handler(void *opaque, uint32_t events)
{
	(void)events;
	struct event_timer *t = opaque;
	uint64_t expirations;
	if (read(t->src.fd, &expirations, sizeof(expirations)) != sizeof(expirations))
		return;
	t->armed = false;
	t->fn(t->opaque);
}

int event_timer_init(struct event_loop *loop, struct event_timer *t, event_cb_fn fn, void *opaque)
{
	memset(t, 0, sizeof(*t));
	t->fn = fn;
	t->opaque = opaque;
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0) {
		log_error("timerfd_create: %s", strerror(errno));
		return -1;
	}
	if (event_loop_add_fd(loop, &t->src, fd, EPOLLIN, timer_handler, t)) {
		close(fd);
		return -1;
	}
	return 0;
}

void event_timer_arm(struct event_timer *t, uint64_t ns)
{
	if (ns == 0)
		ns = 1; /* 0 would disarm */
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ns / 1000000000ULL),
					      .tv_nsec = (long)(ns % 1000000000ULL)}};
	if (timerfd_settime(t->src.fd, 0, &its, NULL) == 0)
		t->armed = true;
}

void event_timer_cancel(struct event_timer *t)
{
	struct itimerspec its = {0};
	timerfd_settime(t->src.fd, 0, &its, NULL);
	t->armed = false;
}

void event_timer_destroy(struct event_loop *loop, struct event_timer *t)
{
	if (t->src.fn) {
		event_loop_del_fd(loop, &t->src);
		close(t->src.fd);
		t->src.fn = NULL;
	}
}

void event_loop_add_poller(struct event_loop *loop, struct event_poller *p)
{
	p->next = loop->pollers;
	loop->pollers = p;
	if (!loop->poll.grow)
		adaptive_poll_init(&loop->poll, 0, ADAPTIVE_POLL_GROW, ADAPTIVE_POLL_SHRINK);
	adaptive_poll_raise_bound(&loop->poll, p->max_ns);
}

void event_loop_del_poller(struct event_loop *loop, struct event_poller *p)
{
	for (struct event_poller **pp = &loop->pollers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	if (!loop->pollers)
		loop->poll.max_ns = loop->poll.window_ns = 0;
}

static uint64_t monotonic_ns(void *opaque)
{
	(void)opaque;
	return clock_monotonic_ns();
}

/* One poll phase's state: where an fd check's events go. */
struct poll_phase {
	struct event_loop *loop;
	struct epoll_event *events;
	int n;
};

static bool poll_pollers(void *opaque)
{
	struct poll_phase *ph = opaque;
	bool found = false;
	for (struct event_poller *p = ph->loop->pollers; p; p = p->next)
		found |= p->poll(p->opaque);
	return found;
}

static bool poll_fds(void *opaque)
{
	struct poll_phase *ph = opaque;
	int n = epoll_wait(ph->loop->epoll_fd, ph->events, MAX_EVENTS, 0);
	ph->n = n > 0 ? n : 0;
	return n > 0;
}

static const struct adaptive_poll_ops poll_ops = {
    .now_ns = monotonic_ns, .poll = poll_pollers, .poll_fds = poll_fds};

/* The loop is about to sleep: every poller turns notifications back on and looks once more.
 * True when one found work meanwhile (it scheduled it): then the loop must not sleep. */
static bool end_polling(struct event_loop *loop)
{
	bool work = false;
	loop->polling = false;
	for (struct event_poller *p = loop->pollers; p; p = p->next)
		work |= p->end(p->opaque);
	return work;
}

int event_loop_run_once(struct event_loop *loop, int timeout_ms)
{
	struct epoll_event events[MAX_EVENTS];
	struct poll_phase ph = {.loop = loop, .events = events, .n = 0};
	bool found = false;
	if (bottom_halves_pending(loop))
		timeout_ms = 0;
	/* Polling: only where the loop would sleep; the wait is measured to adapt the window. */
	bool adapt = timeout_ms != 0 && loop->pollers && loop->poll.max_ns;
	uint64_t t0 = adapt ? monotonic_ns(NULL) : 0;
	if (adapt && loop->poll.window_ns) {
		if (!loop->polling) {
			for (struct event_poller *p = loop->pollers; p; p = p->next)
				p->begin(p->opaque);
			loop->polling = true;
		}
		found = adaptive_poll_run(&loop->poll, &poll_ops, &ph);
	}
	int n = ph.n;
	if (!found) {
		/* Sleeping (or, with timeout 0, not): polling ends first, or a guest told not to
		 * notify would never wake us. */
		if (loop->polling && timeout_ms != 0 && end_polling(loop))
			timeout_ms = 0;
		n = epoll_wait(loop->epoll_fd, events, MAX_EVENTS, timeout_ms);
	} else if (!n) {
		/* The rings had work (a bottom half now runs one batch): the fds are served
		 * first, so a guest that keeps its ring busy cannot starve them. */
		n = epoll_wait(loop->epoll_fd, events, MAX_EVENTS, 0);
	}
	if (adapt)
		adaptive_poll_update(&loop->poll, monotonic_ns(NULL) - t0);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		log_error("epoll_wait: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct event_source *src = events[i].data.ptr;
		src->fn(src->opaque, events[i].events);
	}
	run_bottom_halves(loop);
	loop->iterations++;
	return n;
}

static void *loop_thread(void *arg)
{
	struct event_loop *loop = arg;
	loop->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), "io"); /* for top -H, perf and /proc */
	if (loop->pinned && sched_setaffinity(0, sizeof(loop->pin), &loop->pin) < 0) {
		log_error("cannot pin the I/O thread: %s", strerror(errno));
		loop->start_failed = true;
	}
	if (!loop->start_failed && loop->on_start && loop->on_start(loop->on_start_opaque))
		loop->start_failed = true;
	sem_post(&loop->started);
	if (loop->start_failed)
		return NULL;
	while (!loop->stop) {
		if (event_loop_run_once(loop, -1) < 0)
			break;
	}
	return NULL;
}

int event_loop_start(struct event_loop *loop, const cpu_set_t *cpus, int (*on_start)(void *),
		     void *opaque)
{
	loop->on_start = on_start;
	loop->on_start_opaque = opaque;
	loop->stop = false;
	loop->pinned = cpus != NULL;
	if (cpus)
		loop->pin = *cpus;
	sem_init(&loop->started, 0, 0);
	int rc = pthread_create(&loop->thread, NULL, loop_thread, loop);
	if (rc) {
		log_error("cannot start the I/O thread: %s", strerror(rc));
		return -1;
	}
	/* Wait until the thread knows its id and has applied its pinning. */
	while (sem_wait(&loop->started) < 0 && errno == EINTR)
		;
	loop->running = true;
	return loop->start_failed ? -1 : 0;
}

void event_loop_stop(struct event_loop *loop)
{
	if (!loop->running)
		return;
	loop->stop = true;
	wake(loop);
	pthread_join(loop->thread, NULL);
	loop->running = false;
}
