/*
 * Installing the seccomp filters (policy: seccomp_rules.c). The programs are compiled at build
 * time (seccomp_aot.h): at start a thread copies its role's, puts the pid in and loads it; the
 * runtime libseccomp build is the fallback. A refused call traps: the process reports the call
 * and exits.
 */
#include "seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "base/thread_sandbox.h"
#include "seccomp_aot.h"
#include "seccomp_rules.h"

static void (*violation_hook)(void);

/* Async-signal-safe decimal. */
static size_t format_uint(char *buf, unsigned long v)
{
	char tmp[24];
	size_t n = 0, i = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		buf[i++] = tmp[--n];
	return i;
}

static void on_sigsys(int sig, siginfo_t *info, void *uctx)
{
	(void)sig;
	(void)uctx;
	char msg[160];
	static const char head[] = "minivmm: seccomp refused system call ";
	static const char tail[] = "; this is a minivmm bug: please report it (--seccomp off "
				   "works around it)\n";
	size_t n = 0;
	memcpy(msg + n, head, sizeof(head) - 1);
	n += sizeof(head) - 1;
	n += format_uint(msg + n, (unsigned long)(unsigned)info->si_syscall);
	memcpy(msg + n, tail, sizeof(tail) - 1);
	n += sizeof(tail) - 1;
	ssize_t w = write(STDERR_FILENO, msg, n);
	(void)w;
	if (violation_hook)
		violation_hook();
	_exit(1);
}

bool seccomp_default_on(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return false;
#else
	return true;
#endif
#else
	return true;
#endif
}

/* Load a finished program as seccomp_load would: no new privileges, then the filter (with
 * TSYNC for the whole process; a positive return is a thread that could not take it). */
static int load_program(const struct sock_filter *insns, size_t len, bool whole_process, char *err,
			size_t errlen)
{
	struct sock_fprog prog = {.len = (unsigned short)len,
				  .filter = (struct sock_filter *)insns};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(err, errlen, "seccomp: no_new_privs: %s", strerror(errno));
		return -1;
	}
	long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			  whole_process ? SECCOMP_FILTER_FLAG_TSYNC : 0, &prog);
	if (rc != 0) {
		snprintf(err, errlen, "seccomp: loading the filter: %s",
			 rc > 0 ? "a thread cannot synchronise" : strerror(errno));
		return -1;
	}
	return 0;
}

/* The policy's filter built and compiled now by libseccomp. */
static int load_runtime(const struct seccomp_policy *policy, enum seccomp_role role, char *err,
			size_t errlen)
{
	scmp_filter_ctx ctx =
	    seccomp_rules_filter(&policy->needs, role, (uint32_t)getpid(), err, errlen);
	if (!ctx)
		return -1;
	int rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0) {
		snprintf(err, errlen, "seccomp: loading the filter: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

const struct seccomp_aot_program *seccomp_aot_program_for(const struct seccomp_needs *needs,
							  enum seccomp_role role)
{
	if ((unsigned)role >= SECCOMP_AOT_ROLES)
		return NULL;
	return &seccomp_aot_programs[role][seccomp_aot_needs_index(needs)];
}

/* Whether the process filter is the program built ahead. libseccomp then has not looked at
 * the kernel (seccomp_init does, with seccomp calls the process filter refuses): no thread may
 * fall back on it. So the process takes the programs built ahead only if every role's fits. */
static bool process_built_ahead;

static bool every_role_fits(const struct seccomp_aot_program *process,
			    const struct seccomp_needs *needs)
{
	if (!seccomp_aot_fits(process, SECCOMP_AOT_MAX_LEN))
		return false;
	for (int role = SECCOMP_PROCESS + 1; role < SECCOMP_AOT_ROLES; role++)
		if (!seccomp_aot_fits(seccomp_aot_program_for(needs, role), SECCOMP_AOT_MAX_LEN))
			return false;
	return true;
}

int seccomp_install_from(const struct seccomp_aot_program *aot, const struct seccomp_policy *policy,
			 enum seccomp_role role, char *err, size_t errlen)
{
	bool whole_process = role == SECCOMP_PROCESS;
	if (whole_process) {
		violation_hook = policy->on_violation;
		struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSYS, &sa, NULL) < 0) {
			snprintf(err, errlen, "seccomp: sigaction(SIGSYS): %s", strerror(errno));
			return -1;
		}
	}
	if (!aot) {
		if (whole_process)
			process_built_ahead = false;
		return load_runtime(policy, role, err, errlen);
	}
	bool fits = whole_process ? every_role_fits(aot, &policy->needs)
				  : seccomp_aot_fits(aot, SECCOMP_AOT_MAX_LEN);
	if (!fits && !whole_process && process_built_ahead) {
		snprintf(err, errlen, "seccomp: role %d's program built ahead does not fit",
			 (int)role);
		return -1;
	}
	if (!fits) {
		log_warn("seccomp: a program built ahead does not fit its pid slots: building "
			 "role %d's filter now",
			 (int)role);
		if (whole_process)
			process_built_ahead = false;
		return load_runtime(policy, role, err, errlen);
	}
	struct sock_filter insns[SECCOMP_AOT_MAX_LEN];
	long len = seccomp_aot_patch(aot, (uint32_t)getpid(), insns, SECCOMP_AOT_MAX_LEN);
	if (len < 0) {
		snprintf(err, errlen, "seccomp: role %d's program built ahead does not fit",
			 (int)role);
		return -1;
	}
	int rc = load_program(insns, (size_t)len, whole_process, err, errlen);
	if (whole_process && rc == 0)
		process_built_ahead = true;
	return rc;
}

int seccomp_install(const struct seccomp_policy *policy, enum seccomp_role role, char *err,
		    size_t errlen)
{
	return seccomp_install_from(seccomp_aot_program_for(&policy->needs, role), policy, role,
				    err, errlen);
}

static const struct seccomp_policy *thread_policy;

static int narrow_thread(enum sandbox_thread thread)
{
	static const enum seccomp_role roles[] = {
	    [SANDBOX_BLK_WORKER] = SECCOMP_BLK_WORKER,
	    [SANDBOX_CONSOLE_IN] = SECCOMP_CONSOLE_IN,
	    [SANDBOX_CONSOLE_OUT] = SECCOMP_CONSOLE_IN, /* write and futex: within its calls */
	    [SANDBOX_POPULATE] = SECCOMP_POPULATE,
	};
	char err[160];
	if (seccomp_install(thread_policy, roles[thread], err, sizeof(err)) == 0)
		return 0;
	log_error("%s thread: %s",
		  thread == SANDBOX_BLK_WORKER	  ? "blk worker"
		  : thread == SANDBOX_CONSOLE_IN  ? "console input"
		  : thread == SANDBOX_CONSOLE_OUT ? "console output"
						  : "populate",
		  err);
	return -1;
}

void seccomp_arm_thread_filters(const struct seccomp_policy *policy)
{
	thread_policy = policy;
	thread_sandbox_set_hook(narrow_thread);
}
