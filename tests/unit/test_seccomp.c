/* The seccomp allow-list: what a running VMM does still works (threads, memory, I/O), what it
 * must never do (open a file for writing, exec, fork) stops the process with status 1 and a
 * line naming the call. Each case runs in a child of its own: a filter cannot be removed. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/seccomp.h"

static void note_restore(void)
{
	static const char msg[] = "hook ran\n";
	ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)w;
}

static void *thread_body(void *arg)
{
	return arg;
}

/* Runs body() in a child under the filter, stderr captured; returns the wait status. */
static int run_filtered(void (*body)(void), char *out, size_t outlen)
{
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		char err[160];
		if (seccomp_install(note_restore, err, sizeof(err))) {
			ssize_t w = write(STDERR_FILENO, err, strlen(err));
			(void)w;
			_exit(42);
		}
		body();
		_exit(0);
	}
	close(pipefd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < outlen && (r = read(pipefd[0], out + n, outlen - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(pipefd[0]);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void skip_under_sanitizers(void)
{
	if (!seccomp_default_on())
		cr_skip_test("sanitizer build: its runtime makes calls the filter refuses");
}

/* body must be stopped by the filter: exit status 1 and the report naming system call nr
 * (any, when nr < 0). Returns what the child wrote. */
static void expect_refused(void (*body)(void), int nr, char *out, size_t outlen)
{
	int status = run_filtered(body, out, outlen);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x: %s", status, out);
	char want[80] = "seccomp refused system call";
	if (nr >= 0)
		snprintf(want, sizeof(want), "seccomp refused system call %d;", nr);
	cr_assert(strstr(out, want), "message: %s", out);
}

static void allowed_work(void)
{
	pthread_t t;
	void *ret = NULL;
	if (pthread_create(&t, NULL, thread_body, (void *)7) || pthread_join(t, &ret) ||
	    ret != (void *)7)
		_exit(3);
	void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, 1 << 20, MADV_DONTNEED) || munmap(p, 1 << 20))
		_exit(4);
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC); /* read-only: allowed */
	char buf[4096];
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		_exit(5);
	buf[n] = 0;
	if (!strstr(buf, "Seccomp:\t2")) /* 2: filter mode */
		_exit(6);
	close(fd);
	/* Naming a thread (prctl PR_SET_NAME): allowed, and it takes. */
	if (pthread_setname_np(pthread_self(), "named"))
		_exit(7);
	fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0 || (buf[n] = 0, strcmp(buf, "named\n")))
		_exit(8);
	close(fd);
}

Test(seccomp, running_a_vmm_stays_allowed)
{
	skip_under_sanitizers();
	char out[512];
	int status = run_filtered(allowed_work, out, sizeof(out));
	cr_assert(WIFEXITED(status), "child died: %s", out);
	cr_assert_eq(WEXITSTATUS(status), 0, "exit %d: %s", WEXITSTATUS(status), out);
	cr_assert_str_empty(out);
}

static void open_for_writing(void)
{
	open("/tmp/minivmm-seccomp-test", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	_exit(9); /* not reached */
}

Test(seccomp, opening_a_file_for_writing_stops_the_process)
{
	skip_under_sanitizers();
	char out[512];
	expect_refused(open_for_writing, (int)SYS_openat, out, sizeof(out));
	cr_assert(strstr(out, "hook ran"), "the terminal hook did not run: %s", out);
	cr_assert_neq(access("/tmp/minivmm-seccomp-test", F_OK), 0);
}

static void run_exec(void)
{
	char *argv[] = {"/bin/true", NULL};
	execv("/bin/true", argv);
	_exit(9);
}

Test(seccomp, exec_stops_the_process)
{
	skip_under_sanitizers();
	char out[512];
	expect_refused(run_exec, -1, out, sizeof(out));
}

static void run_fork(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(8); /* a child got through */
	_exit(9);
}

Test(seccomp, fork_stops_the_process)
{
	skip_under_sanitizers();
	char out[512];
	expect_refused(run_fork, (int)SYS_clone, out, sizeof(out));
}
