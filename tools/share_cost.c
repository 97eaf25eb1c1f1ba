/*
 * What `--share` (and so `minivmm run`'s root) costs minivmm at start-up, natively (`make
 * share-cost [DIR=/] [RUNS=11]`, not part of `make test`; no /dev/kvm needed; root, Debian's
 * virtiofsd): each run starts virtiofsd on DIR read-only under its supervisor as minivmm does
 * (virtiofsd_start: the socket, the fork, the mount namespace, exec), waits for its handshake
 * (the first reply comes once virtiofsd runs and serves), then stops it (closing the
 * connection, the supervisor's pipe, waiting for both to be gone). Prints the median and the
 * spread of each step in microseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devices/backends/vhost_user.h"
#include "vmm/kinds/virtiofsd.h"

#define MAX_RUNS 101

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void report(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%-28s median %8.0f us   min %8.0f   max %8.0f\n", what, v[n / 2], v[0], v[n - 1]);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/";
	int runs = argc > 2 ? atoi(argv[2]) : 11;
	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "share_cost: runs must be 1 to %d\n", MAX_RUNS);
		return 2;
	}
	char err[320], buf[4096];
	const char *bin = virtiofsd_find(NULL, buf, sizeof(buf), err, sizeof(err));
	if (!bin) {
		fprintf(stderr, "share_cost: %s\n", err);
		return 2;
	}
	static double start[MAX_RUNS], shake[MAX_RUNS], stop[MAX_RUNS], total[MAX_RUNS];
	for (int i = 0; i < runs; i++) {
		struct virtiofsd d;
		double t0 = now_us();
		struct vhost_user *vu = virtiofsd_start(&d, bin, dir, true, err, sizeof(err));
		double t1 = now_us();
		struct vhost_user_info info;
		if (!vu || vhost_user_handshake(vu, VHOST_USER_PROTOCOL_KNOWN, &info)) {
			fprintf(stderr, "share_cost: %s\n", vu ? vhost_user_error(vu) : err);
			return 1;
		}
		double t2 = now_us();
		vhost_user_close(vu);
		virtiofsd_stop(&d, 3000);
		double t3 = now_us();
		start[i] = t1 - t0;
		shake[i] = t2 - t1;
		stop[i] = t3 - t2;
		total[i] = t3 - t0;
	}
	printf("share-cost: virtiofsd %s on %s, read-only, %d runs\n", bin, dir, runs);
	report("start (fork, socket)", start, runs);
	report("until the handshake", shake, runs);
	report("stop (until both gone)", stop, runs);
	report("total", total, runs);
	return 0;
}
