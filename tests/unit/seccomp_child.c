#include "seccomp_child.h"

#include <criterion/criterion.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int seccomp_child_run(const struct seccomp_policy *policy, enum seccomp_role role,
		      void (*prepare)(void), void (*body)(void), char *out, size_t outlen)
{
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		if (prepare)
			prepare();
		char err[160];
		if (seccomp_install(policy, SECCOMP_PROCESS, err, sizeof(err)) ||
		    (role != SECCOMP_PROCESS && seccomp_install(policy, role, err, sizeof(err)))) {
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
