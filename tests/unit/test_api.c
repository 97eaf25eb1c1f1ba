/* The control socket's request handling without a socket: malformed and unknown requests get
 * an error response, balloon-set checks its argument, status and shutdown on a bare VM. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vmm/api.h"
#include "vmm/vm.h"

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
	char *r = api_handle_request(&vm, line, strlen(line));
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
	r = req("{\"cmd\":\"resume\"}");
	cr_assert_str_eq(r, "{\"ok\":true}");
	free(r);
	r = req(" {\"cmd\" : \"shutdown\"}\t");
	cr_assert_str_eq(r, "{\"ok\":true}");
	free(r);
	cr_assert(vm_is_stopping(&vm));
	cr_assert_eq(vm.exit_status, 0);
}
