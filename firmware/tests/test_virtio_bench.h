/* test=virtio-bench: notification and interrupt costs of the first rng device per transport. */
#ifndef TEST_VIRTIO_BENCH_H
#define TEST_VIRTIO_BENCH_H

const char *test_virtio_bench(void);

#endif
