/* The control socket's request handling without a socket: malformed and unknown requests get
 * an error response, balloon-set checks its argument, status and shutdown on a bare VM. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "vmm/api/api.h"
#include "vmm/kvm/vcpu.h"
#include "vmm/kvm/vm.h"

static struct vm vm;
static struct vm_config cfg;

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	memset(&cfg, 0, sizeof(cfg));
	cfg.memory_bytes = 256ULL << 20;
	vm.cfg = &cfg;
	vm.nr_vcpus = 1;
	pthread_mutex_init(&vm.stop_lock, NULL);
	pthread_mutex_init(&vm.pause_lock, NULL);
	pthread_cond_init(&vm.pause_cond, NULL);
	vm.stop_fd = eventfd(0, EFD_CLOEXEC);
}

static void teardown(void)
{
	close(vm.stop_fd);
}

static char *req(const char *line)
{
	char *r = api_handle_request(&vm, line, strlen(line), NULL, 0);
	cr_assert_not_null(r);
	return r;
}

static void expect_error(const char *line, const char *what)
{
	char *r = req(line);
	cr_assert(!strncmp(r, "{\"ok\":false,\"error\":\"", 21), "%s -> %s", line, r);
	cr_assert_not_null(strstr(r, what), "%s -> %s", line, r);
	free(r);
}

TestSuite(api, .init = setup, .fini = teardown);

Test(api, errors)
{
	expect_error("", "malformed request: expected a JSON object");
	expect_error("{\"cmd\":", "malformed request");
	expect_error("{\"cmd\":\"status\"} trailing", "malformed request");
	expect_error("{}", "needs a string \\\"cmd\\\"");
	expect_error("{\"cmd\":7}", "needs a string \\\"cmd\\\"");
	expect_error("{\"cmd\":\"reboot\\n\\\"x\"}", "unknown command \\\"reboot\\n\\\"x\\\"");
	expect_error("{\"cmd\":\"reboot\"}",
		     "(expected status, balloon-set, pause, resume, snapshot or shutdown)");
	expect_error("{\"cmd\":\"status\",\"mib\":1}", "unexpected member \\\"mib\\\"");
	expect_error("{\"cmd\":\"balloon-set\"}", "needs an integer");
	expect_error("{\"cmd\":\"balloon-set\",\"mib\":\"64\"}", "needs an integer");
	expect_error("{\"cmd\":\"balloon-set\",\"mib\":-1}", "mib must be 0 to 256");
	expect_error("{\"cmd\":\"balloon-set\",\"mib\":257}", "mib must be 0 to 256");
	expect_error("{\"cmd\":\"balloon-set\",\"mib\":64}", "no balloon device");
}

Test(api, status_and_shutdown)
{
	char *r = req("{\"cmd\":\"status\"}");
	cr_assert(
	    !strncmp(r, "{\"ok\":true,\"state\":\"running\",\"memory_mib\":256,\"vcpus\":[{", 55),
	    "%s", r);
	cr_assert_not_null(strstr(r, "\"devices\":[]"), "%s", r);
	free(r);
	/* --restore --paused: paused from the start, before any vCPU thread has parked. */
	vm.pause_requested = true;
	r = req("{\"cmd\":\"status\"}");
	cr_assert(!strncmp(r, "{\"ok\":true,\"state\":\"paused\"", 26), "%s", r);
	free(r);
	r = req("{\"cmd\":\"resume\"}");
	cr_assert_str_eq(r, "{\"ok\":true}");
	free(r);
	r = req(" {\"cmd\" : \"shutdown\"}\t");
	cr_assert_str_eq(r, "{\"ok\":true}");
	free(r);
	cr_assert(vm_is_stopping(&vm));
	cr_assert_eq(vm.exit_status, 0);
}

/* ---- over the socket: descriptors passed with a request (SCM_RIGHTS) ---- */

#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "vmm/api/fd_passing.h"
#include "vmm/api/ctl.h"
#include "vmm/snapshot/snapshot_files.h"

static char sock_dir[64], sock_path[128];
static struct api_server *server;
static atomic_bool loop_done;
static pthread_t loop_thread;

static void *run_loop(void *arg)
{
	(void)arg;
	while (!loop_done)
		event_loop_run_once(&vm.loop, 20);
	return NULL;
}

static void socket_setup(void)
{
	setup();
	cr_assert_eq(event_loop_init(&vm.loop), 0);
	snprintf(sock_dir, sizeof(sock_dir), "/tmp/minivmm-api-XXXXXX");
	cr_assert_not_null(mkdtemp(sock_dir));
	snprintf(sock_path, sizeof(sock_path), "%s/api.sock", sock_dir);
	server = api_server_start(&vm, sock_path);
	cr_assert_not_null(server);
	loop_done = false;
	cr_assert_eq(pthread_create(&loop_thread, NULL, run_loop, NULL), 0);
}

static void socket_teardown(void)
{
	loop_done = true;
	pthread_join(loop_thread, NULL);
	api_server_stop(server);
	event_loop_destroy(&vm.loop);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sock_dir);
	cr_assert_eq(system(cmd), 0);
	teardown();
}

static int connect_api(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strcpy(a.sun_path, sock_path);
	cr_assert_eq(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

/* Send line with nfds descriptors on connection s and return the response line (malloc'd). */
static char *request_with_fds(int s, const char *line, const int *fds, int nfds)
{
	cr_assert_eq(send_with_fds(s, line, strlen(line), fds, nfds), (ssize_t)strlen(line));
	char *buf = calloc(1, 4096);
	size_t len = 0;
	struct pollfd pfd = {.fd = s, .events = POLLIN};
	while (len < 4095 && !memchr(buf, '\n', len)) {
		cr_assert_eq(poll(&pfd, 1, 5000), 1, "no response to %s", line);
		ssize_t n = recv(s, buf + len, 4095 - len, 0);
		cr_assert_gt(n, 0, "connection closed before a response to %s", line);
		len += (size_t)n;
	}
	return buf;
}

/* Whether every write end of the pipe read end r is closed (the server kept no copy). */
static bool write_ends_closed(int r)
{
	struct pollfd pfd = {.fd = r, .events = POLLIN};
	char c;
	return poll(&pfd, 1, 5000) == 1 && read(r, &c, 1) == 0;
}

TestSuite(api_socket, .init = socket_setup, .fini = socket_teardown);

/* Descriptors go only with a snapshot, at most three, and the server closes each one once its
 * request is answered: none is kept for the next request on the same connection. */
Test(api_socket, passed_descriptors_are_checked_and_closed)
{
	int p[4][2];
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pipe2(p[i], O_CLOEXEC), 0);
	int w[4] = {p[0][1], p[1][1], p[2][1], p[3][1]};
	int s = connect_api();
	char *r = request_with_fds(s, "{\"cmd\":\"status\"}\n", w, 1);
	cr_assert(strstr(r, "\\\"status\\\" takes no file descriptors"), "%s", r);
	free(r);
	r = request_with_fds(s, "{\"cmd\":\"snapshot\"}\n", w, 4);
	cr_assert(strstr(r, "more than 3 file descriptors"), "%s", r);
	free(r);
	/* Three pipes: received in order and refused before the VM is paused. */
	r = request_with_fds(s, "{\"cmd\":\"snapshot\"}\n", w, 3);
	cr_assert(strstr(r, "snapshot: memory: not an empty regular file"), "%s", r);
	free(r);
	r = request_with_fds(s, "{\"cmd\":\"snapshot\",\"path\":\"/x\"}\n", NULL, 0);
	cr_assert(strstr(r, "snapshot needs its three files passed with the request"), "%s", r);
	free(r);
	for (int i = 0; i < 4; i++) {
		close(p[i][1]);
		cr_assert(write_ends_closed(p[i][0]), "the server kept descriptor %d", i);
		close(p[i][0]);
	}
	close(s);
}

/* `minivmm ctl snapshot DIR` makes DIR and its files, passes them, and removes them when the
 * snapshot fails (here: a VM whose one vCPU never pauses); an existing DIR is left alone. */
Test(api_socket, ctl_snapshot_files_are_made_by_the_client_and_removed_on_failure)
{
	char dir[160];
	snprintf(dir, sizeof(dir), "%s/snap", sock_dir);
	char *argv[] = {"ctl", "--sock", sock_path, "snapshot", dir, NULL};
	cr_assert_eq(ctl_main(5, argv), 1);
	cr_assert_neq(access(dir, F_OK), 0, "a failed snapshot left %s", dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	char keep[200];
	snprintf(keep, sizeof(keep), "%s/keep", dir);
	int fd = open(keep, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(ctl_main(5, argv), 2);
	cr_assert_eq(access(keep, F_OK), 0, "ctl removed a directory it did not make");
}

/* status reports each vCPU's exits by reason as counted by vcpu_count_exit. */
Test(api, status_vcpu_exits)
{
	static const uint32_t reasons[] = {KVM_EXIT_IO,	  KVM_EXIT_IO,	     KVM_EXIT_IO,
					   KVM_EXIT_MMIO, KVM_EXIT_MMIO,     KVM_EXIT_HLT,
					   KVM_EXIT_INTR, KVM_EXIT_SHUTDOWN, KVM_EXIT_IO,
					   KVM_EXIT_MMIO, KVM_EXIT_INTR};
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		vcpu_count_exit(&vm.vcpus[0], reasons[i]);
	char *r = req("{\"cmd\":\"status\"}");
	cr_assert_not_null(strstr(r,
				  "\"state\":\"running\",\"exits\":{\"io\":4,\"mmio\":3,\"hlt\":1,"
				  "\"other\":3}}]"),
			   "%s", r);
	free(r);
}

/* status reports the I/O thread's adaptive polling: its bound, window and counters. */
Test(api, status_io_poll)
{
	char *r = req("{\"cmd\":\"status\"}");
	cr_assert_not_null(strstr(r, "\"io_poll\":{\"max_ns\":0,\"window_ns\":0,\"polls\":0,"),
			   "polling off: %s", r);
	free(r);
	adaptive_poll_init(&vm.loop.poll, 50000, 0, 0);
	vm.loop.poll.polls = 3;
	vm.loop.poll.polls_found = 2;
	vm.loop.poll.poll_ns = 1234;
	vm.loop.poll.shrinks = 1;
	r = req("{\"cmd\":\"status\"}");
	cr_assert_not_null(strstr(r,
				  "\"io_poll\":{\"max_ns\":50000,\"window_ns\":4000,\"polls\":3,"
				  "\"polls_found\":2,\"poll_ns\":1234,\"grows\":0,\"shrinks\":1}"),
			   "%s", r);
	free(r);
}
