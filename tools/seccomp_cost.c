/*
 * What installing the seccomp filters costs (`make seccomp-cost [RUNS=N]`): in a fresh child
 * each run, the process filter, or one thread's narrowing under it, built by libseccomp at run
 * time ("runtime"), built ahead ("built", what minivmm does), and the kernel's part of that
 * alone ("kernel": prctl and seccomp on a finished program). Prints the median and quartiles
 * of N runs (default 51) in microseconds.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmm/sandbox/seccomp.h"
#include "vmm/sandbox/seccomp_aot.h"

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One run in a child: nanoseconds to install role's filter (after the process filter, untimed,
 * built the same way, unless role is the process), or -1. aot: 1 built ahead, 0 libseccomp now, 2
 * only the kernel's part (the patched program loaded by hand). */
static long long one_run(int aot, enum seccomp_role role)
{
	int fds[2];
	if (pipe(fds))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		struct seccomp_policy policy = {0};
		char err[160];
		long long dt = -1;
		/* (libseccomp under a process filter built ahead cannot start: seccomp.c) */
		const struct seccomp_aot_program *process =
		    aot ? seccomp_aot_program_for(&policy.needs, SECCOMP_PROCESS) : NULL;
		if (role == SECCOMP_PROCESS ||
		    !seccomp_install_from(process, &policy, SECCOMP_PROCESS, err, sizeof(err))) {
			const struct seccomp_aot_program *prog =
			    seccomp_aot_program_for(&policy.needs, role);
			static struct sock_filter insns[SECCOMP_AOT_MAX_LEN];
			long len =
			    seccomp_aot_patch(prog, (uint32_t)getpid(), insns, SECCOMP_AOT_MAX_LEN);
			struct sock_fprog fprog = {.len = (unsigned short)len, .filter = insns};
			unsigned flags = role == SECCOMP_PROCESS ? SECCOMP_FILTER_FLAG_TSYNC : 0;
			long long t0 = now_ns();
			int rc =
			    aot == 2
				? (len < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
				   syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog))
				: seccomp_install_from(aot ? prog : NULL, &policy, role, err,
						       sizeof(err));
			if (rc == 0)
				dt = now_ns() - t0;
		}
		_exit(write(fds[1], &dt, sizeof(dt)) == sizeof(dt) ? 0 : 1);
	}
	close(fds[1]);
	long long dt = -1;
	if (pid < 0 || read(fds[0], &dt, sizeof(dt)) != sizeof(dt))
		dt = -1;
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return dt;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 51;
	if (runs < 1 || runs > 10000)
		runs = 51;
	long long *t = calloc((size_t)runs, sizeof(*t));
	if (!t)
		return 1;
	static const char *const role_names[] = {"process (TSYNC)", "main", "vcpu", "io"};
	static const char *const ways[] = {"runtime", "built", "kernel"};
	for (int role = SECCOMP_PROCESS; role <= SECCOMP_IO; role++)
		for (int aot = 0; aot <= 2; aot++) {
			for (int i = 0; i < runs; i++)
				if ((t[i] = one_run(aot, role)) < 0) {
					fprintf(stderr, "seccomp_cost: a run failed\n");
					return 1;
				}
			qsort(t, (size_t)runs, sizeof(*t), cmp);
			printf("%-16s %-8s median %7.1f us  (q1 %.1f, q3 %.1f; %d runs)\n",
			       role_names[role], ways[aot], t[runs / 2] / 1e3, t[runs / 4] / 1e3,
			       t[3 * runs / 4] / 1e3, runs);
		}
	free(t);
	return 0;
}
