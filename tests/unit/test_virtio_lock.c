/* virtio_dev_lock (devices/virtio/virtio.c): the device lock's contention counters, which the
 * control socket's status reports per device ("lock"). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

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
		pthread_mutex_unlock(&dev.lock);
	}
	cr_assert_eq(dev.lock_taken, 3);
	cr_assert_eq(dev.lock_contended, 0);
	cr_assert_eq(dev.lock_wait_ns, 0);
}

static void *take_and_release(void *arg)
{
	(void)arg;
	virtio_dev_lock(&dev);
	pthread_mutex_unlock(&dev.lock);
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
	pthread_mutex_unlock(&dev.lock);
	pthread_join(t, NULL);
	cr_assert_eq(dev.lock_taken, 2);
	cr_assert_eq(dev.lock_contended, 1);
	cr_assert_gt(dev.lock_wait_ns, 0);
	cr_assert_eq(atomic_load(&dev.lock_waiters), 0);
}
