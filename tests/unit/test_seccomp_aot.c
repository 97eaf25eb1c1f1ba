/* The seccomp programs compiled at build time (vmm/sandbox/seccomp_aot.h): for every role and every
 * combination of needs, the one seccomp_install picks, with the pid put in, is the program
 * libseccomp builds from the policy at run time for that pid, instruction for instruction; a
 * program whose pid slots do not match is not used: the filter is built at run time, with a
 * warning, and still refuses what it must. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log_capture.h"
#include "vmm/sandbox/seccomp.h"
#include "vmm/sandbox/seccomp_aot.h"
#include "vmm/sandbox/seccomp_rules.h"

static struct seccomp_needs needs_of(unsigned bits)
{
	return (struct seccomp_needs){.user_net = bits & 1,
				      .tap = bits & 2,
				      .io_uring = bits & 4,
				      .control_socket = bits & 8};
}

static const enum seccomp_role roles[] = {SECCOMP_PROCESS, SECCOMP_MAIN,       SECCOMP_VCPU,
					  SECCOMP_IO,	   SECCOMP_BLK_WORKER, SECCOMP_CONSOLE_IN,
					  SECCOMP_POPULATE};

static void expect_same_as_runtime(uint32_t pid)
{
	for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++)
		for (unsigned bits = 0; bits < 16; bits++) {
			struct seccomp_needs needs = needs_of(bits);
			struct sock_filter *want;
			size_t want_len;
			char err[160];
			cr_assert_eq(seccomp_rules_export(&needs, roles[r], pid, &want, &want_len,
							  err, sizeof(err)),
				     0, "%s", err);
			const struct seccomp_aot_program *aot =
			    seccomp_aot_program_for(&needs, roles[r]);
			cr_assert_not_null(aot);
			static struct sock_filter got[SECCOMP_AOT_MAX_LEN];
			long len = seccomp_aot_patch(aot, pid, got, SECCOMP_AOT_MAX_LEN);
			cr_assert_eq(len, (long)want_len,
				     "role %d needs %u: %ld instructions, want %zu", (int)roles[r],
				     bits, len, want_len);
			cr_assert(!memcmp(got, want, want_len * sizeof(*want)),
				  "role %d needs %u: the program differs", (int)roles[r], bits);
			free(want);
		}
}

Test(seccomp_aot, every_program_is_the_runtime_build_for_this_pid)
{
	expect_same_as_runtime((uint32_t)getpid());
}

Test(seccomp_aot, every_program_is_the_runtime_build_for_other_pids)
{
	expect_same_as_runtime(1);
	expect_same_as_runtime(4194304); /* the largest pid_max */
}

Test(seccomp_aot, every_program_has_one_pid_slot)
{
	for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++)
		for (unsigned bits = 0; bits < 16; bits++) {
			struct seccomp_needs needs = needs_of(bits);
			cr_assert_eq(seccomp_aot_program_for(&needs, roles[r])->pid_slots, 1);
		}
}

Test(seccomp_aot, a_slot_count_mismatch_or_short_buffer_is_refused)
{
	struct seccomp_needs needs = needs_of(0);
	struct seccomp_aot_program bad = *seccomp_aot_program_for(&needs, SECCOMP_VCPU);
	static struct sock_filter out[SECCOMP_AOT_MAX_LEN];
	cr_assert_gt(seccomp_aot_patch(&bad, 1234, out, SECCOMP_AOT_MAX_LEN), 0);
	cr_assert_eq(seccomp_aot_patch(&bad, 1234, out, bad.len - 1), -1);
	bad.pid_slots++;
	cr_assert_eq(seccomp_aot_patch(&bad, 1234, out, SECCOMP_AOT_MAX_LEN), -1);
	bad.pid_slots -= 2;
	cr_assert_eq(seccomp_aot_patch(&bad, 1234, out, SECCOMP_AOT_MAX_LEN), -1);
}

/* In a child: install the process filter from aot, then fork, which it must refuse. Returns
 * the wait status; out gets the child's stderr. */
static int install_then_fork(const struct seccomp_aot_program *aot, char *out, size_t outlen)
{
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		struct seccomp_policy policy = {0};
		char err[160];
		if (seccomp_install_from(aot, &policy, SECCOMP_PROCESS, err, sizeof(err))) {
			ssize_t w = write(STDERR_FILENO, err, strlen(err));
			(void)w;
			_exit(42);
		}
		char *logged = log_captured(); /* the fallback's warning (log_capture.c) */
		ssize_t w = write(STDERR_FILENO, logged, strlen(logged));
		(void)w;
		free(logged);
		/* Allowed: a signal 0 to this process's own thread (the pid rule). */
		if (syscall(SYS_tgkill, getpid(), gettid(), 0))
			_exit(43);
		if (fork() >= 0)
			_exit(44);
		_exit(45);
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

/* The child got past tgkill (its own pid allowed) to fork, refused. */
static void expect_fork_refused(const char *out)
{
	char want[64];
	snprintf(want, sizeof(want), "seccomp refused system call %d;", SYS_clone);
	cr_assert(strstr(out, want), "%s", out);
}

static void skip_under_sanitizers(void)
{
	if (!seccomp_default_on())
		cr_skip_test("sanitizer build: its runtime makes calls the filter refuses");
}

Test(seccomp_aot, the_program_built_ahead_is_installed)
{
	skip_under_sanitizers();
	struct seccomp_needs needs = needs_of(0);
	char out[512];
	int status =
	    install_then_fork(seccomp_aot_program_for(&needs, SECCOMP_PROCESS), out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x: %s", status, out);
	expect_fork_refused(out);
	cr_assert(!strstr(out, "does not fit its pid slots"), "%s", out);
}

Test(seccomp_aot, a_slot_count_mismatch_falls_back_to_the_runtime_build)
{
	skip_under_sanitizers();
	struct seccomp_needs needs = needs_of(0);
	struct seccomp_aot_program bad = *seccomp_aot_program_for(&needs, SECCOMP_PROCESS);
	bad.pid_slots = 2;
	char out[512];
	int status = install_then_fork(&bad, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x: %s", status, out);
	cr_assert(strstr(out, "does not fit its pid slots"), "%s", out);
	expect_fork_refused(out);
}

Test(seccomp_aot, the_runtime_build_alone_is_installed)
{
	skip_under_sanitizers();
	char out[512];
	int status = install_then_fork(NULL, out, sizeof(out));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x: %s", status, out);
	expect_fork_refused(out);
}

static int wake_fd[2];

static void *fork_when_woken(void *arg)
{
	char c;
	if (read(wake_fd[0], &c, 1) != 1)
		_exit(50);
	if (fork() >= 0)
		_exit(51);
	return arg;
}

/* The process filter built ahead goes on with TSYNC: a thread started before it is under it. */
Test(seccomp_aot, the_process_filter_reaches_threads_started_before)
{
	skip_under_sanitizers();
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		pthread_t t;
		int null_fd = open("/dev/null", O_WRONLY); /* the refusal's report */
		if (null_fd < 0 || dup2(null_fd, STDERR_FILENO) < 0 || pipe(wake_fd) ||
		    pthread_create(&t, NULL, fork_when_woken, NULL))
			_exit(52);
		struct seccomp_needs needs = needs_of(0);
		struct seccomp_policy policy = {0};
		char err[160];
		if (seccomp_install_from(seccomp_aot_program_for(&needs, SECCOMP_PROCESS), &policy,
					 SECCOMP_PROCESS, err, sizeof(err)))
			_exit(53);
		if (write(wake_fd[1], "x", 1) != 1)
			_exit(54);
		pthread_join(t, NULL);
		_exit(0);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x", status);
}

/* In a child: the process filter (built ahead, or at run time when process_aot is false), then
 * the vCPU role from a program whose pid slots do not match. Returns the child's exit status:
 * 0 installed, 2 refused with an error, 3 installed but its report is missing. */
static int narrow_with_a_bad_program(bool process_aot)
{
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct seccomp_needs needs = needs_of(0);
		struct seccomp_policy policy = {0};
		struct seccomp_aot_program bad = *seccomp_aot_program_for(&needs, SECCOMP_VCPU);
		bad.pid_slots = 0;
		char err[160];
		if (seccomp_install_from(
			process_aot ? seccomp_aot_program_for(&needs, SECCOMP_PROCESS) : NULL,
			&policy, SECCOMP_PROCESS, err, sizeof(err)))
			_exit(4);
		if (seccomp_install_from(&bad, &policy, SECCOMP_VCPU, err, sizeof(err)))
			_exit(strstr(err, "does not fit") ? 2 : 5);
		char *logged = log_captured();
		bool warned = strstr(logged, "does not fit its pid slots");
		free(logged);
		_exit(warned ? 0 : 3);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "status %#x", status);
	return WEXITSTATUS(status);
}

/* Under a process filter built at run time libseccomp has looked at the kernel: a thread may
 * build its own now. Under one built ahead it may not (seccomp_init's probes would trap): the
 * install fails with an error instead. */
Test(seccomp_aot, a_thread_falls_back_only_under_a_runtime_process_filter)
{
	skip_under_sanitizers();
	cr_assert_eq(narrow_with_a_bad_program(false), 0);
	cr_assert_eq(narrow_with_a_bad_program(true), 2);
}
