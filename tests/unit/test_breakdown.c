/* netbench --breakdown's sampler (examples/netbench/breakdown.h) on a made-up /proc: a thread
 * whose files vanish between two reads (its process exited) is not sampled, so its context
 * switches cannot read as 0 and go backwards (a CI run once saw -0.00015 switches per packet). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* What udpperf's tool.h gives the sampler. */
static void die(const char *what)
{
	cr_assert_fail("%s", what);
}

#pragma GCC diagnostic ignored "-Wunused-function"
#include "examples/netbench/breakdown.h"

static char root[64];

static void put(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/42/task/42/%s", root, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void make_thread(void)
{
	snprintf(root, sizeof(root), "/tmp/minivmm-bd.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	char path[256];
	snprintf(path, sizeof(path), "%s/42", root);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/42/task", root);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/42/task/42", root);
	cr_assert_eq(mkdir(path, 0700), 0);
	bd_proc_root = root;
	put("stat", "42 (io thread) S 1 42 42 0 -1 4194560 0 0 0 0 700 300 0 0 20 0 1 0\n");
	put("schedstat", "123456789 0 10\n");
}

static void remove_thread(void)
{
	static const char *const files[] = {"stat", "comm", "schedstat", "status"};
	char path[256];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/42/task/42/%s", root, files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/42/task/42", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/42/task", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/42", root);
	rmdir(path);
	rmdir(root);
}

Test(breakdown, a_whole_thread_is_sampled, .fini = remove_thread)
{
	make_thread();
	put("comm", "io thread\n");
	put("status", "Name:\tio\nvoluntary_ctxt_switches:\t77\nnonvoluntary_ctxt_switches:\t5\n");
	struct bd_thread t;
	cr_assert(bd_read_thread(42, 42, &t));
	cr_assert_eq(t.ut, 700);
	cr_assert_eq(t.st, 300);
	cr_assert_eq(t.run_ns, 123456789);
	cr_assert_eq(t.vol, 77);
	cr_assert_eq(t.invol, 5);
	cr_assert_str_eq(t.comm, "io thread");
}

Test(breakdown, a_thread_gone_before_its_status_is_not_sampled, .fini = remove_thread)
{
	make_thread();
	put("comm", "io thread\n");
	struct bd_thread t;
	cr_assert_not(bd_read_thread(42, 42, &t), "sampled with 0 switches");
}

Test(breakdown, a_thread_gone_before_its_name_is_not_sampled, .fini = remove_thread)
{
	make_thread();
	put("status", "Name:\tio\nvoluntary_ctxt_switches:\t77\nnonvoluntary_ctxt_switches:\t5\n");
	struct bd_thread t;
	cr_assert_not(bd_read_thread(42, 42, &t));
}

/* A VMM on its way out (threads leaving /proc, its control socket closed) does not end the
 * window: the breakdown would lose the threads that did the work. */
Test(breakdown, a_vmm_exiting_does_not_end_the_window)
{
	static struct breakdown b;
	static struct bd_sample s;
	b = (struct breakdown){.sock_fd = -1};
	b.begin.proc[0].n = 3;
	strcpy(b.begin.status, "{\"ok\":true}");
	s = b.begin;
	cr_assert(bd_sample_complete(&b, &s), "the same VMM, whole");
	s.proc[0].n = 1;
	cr_assert_not(bd_sample_complete(&b, &s), "two threads gone");
	s.proc[0].n = 0;
	cr_assert_not(bd_sample_complete(&b, &s), "the VMM gone");
	s.proc[0].n = 4;
	cr_assert(bd_sample_complete(&b, &s), "a thread more (a populate thread) is fine");
	s.status[0] = 0;
	cr_assert_not(bd_sample_complete(&b, &s), "its control socket no longer answers");
	b.begin.status[0] = 0;
	cr_assert(bd_sample_complete(&b, &s), "no status asked for: threads alone decide");
}
