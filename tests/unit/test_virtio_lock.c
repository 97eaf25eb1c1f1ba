/* virtio_dev_lock/virtio_dev_unlock (devices/virtio/virtio.c): the device lock's contention
 * counters and sampled hold times, which the control socket's status reports per device
 * ("lock"). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "devices/virtio/virtio.h"

static struct virtio_dev dev;

static void setup(void)
{
	memset(&dev, 0, sizeof(dev));
	pthread_mutex_init(&dev.lock, NULL);
}

TestSuite(virtio_lock, .init = setup);

Test(virtio_lock, uncontended_takes_are_counted_and_never_wait)
{
	for (int i = 0; i < 3; i++) {
		virtio_dev_lock(&dev);
		virtio_dev_unlock(&dev);
	}
	cr_assert_eq(dev.lock_taken, 3);
	cr_assert_eq(dev.lock_contended, 0);
	cr_assert_eq(dev.lock_wait_ns, 0);
}

static void *take_and_release(void *arg)
{
	(void)arg;
	virtio_dev_lock(&dev);
	virtio_dev_unlock(&dev);
	return NULL;
}

/* A thread that finds the lock held waits, and that wait is counted once it has the lock. No
 * sleeps: the holder lets go only once the other is known to be waiting (lock_waiters). */
Test(virtio_lock, a_wait_for_a_held_lock_is_counted)
{
	virtio_dev_lock(&dev);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, take_and_release, NULL), 0);
	for (long spins = 0; atomic_load(&dev.lock_waiters) == 0; spins++) {
		cr_assert_lt(spins, 10000000L, "the other thread never waited for the lock");
		sched_yield();
	}
	virtio_dev_unlock(&dev);
	pthread_join(t, NULL);
	cr_assert_eq(dev.lock_taken, 2);
	cr_assert_eq(dev.lock_contended, 1);
	cr_assert_gt(dev.lock_wait_ns, 0);
	cr_assert_eq(atomic_load(&dev.lock_waiters), 0);
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The first take of every VIRTIO_LOCK_HOLD_SAMPLE is timed from take to release, no other. */
Test(virtio_lock, one_take_in_every_sample_period_is_timed)
{
	for (int i = 0; i < 2 * VIRTIO_LOCK_HOLD_SAMPLE + 1; i++) {
		virtio_dev_lock(&dev);
		virtio_dev_unlock(&dev);
	}
	cr_assert_eq(dev.lock_hold_samples, 3);
	cr_assert_eq(dev.lock_hold_start_ns, 0, "no sample left open after a release");
	cr_assert_leq(dev.lock_hold_max_ns, dev.lock_hold_ns);
}

/* A sampled hold is at least as long as the lock was held (no sleep: the holder spins on the
 * clock), and the largest sample is kept. */
Test(virtio_lock, a_sampled_hold_time_covers_the_whole_hold)
{
	virtio_dev_lock(&dev);
	uint64_t t0 = now_ns();
	while (now_ns() - t0 < 2000000)
		;
	virtio_dev_unlock(&dev);
	cr_assert_eq(dev.lock_hold_samples, 1);
	cr_assert_geq(dev.lock_hold_ns, 2000000);
	cr_assert_eq(dev.lock_hold_max_ns, dev.lock_hold_ns);
	for (int i = 1; i < VIRTIO_LOCK_HOLD_SAMPLE + 1; i++) {
		virtio_dev_lock(&dev);
		virtio_dev_unlock(&dev);
	}
	cr_assert_eq(dev.lock_hold_samples, 2);
	cr_assert_geq(dev.lock_hold_max_ns, 2000000, "the largest sample is kept");
	cr_assert_lt(dev.lock_hold_ns - dev.lock_hold_max_ns, 2000000, "the short hold is short");
}
