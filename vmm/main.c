/* minivmm entry point: the subcommands (ctl, run), or parse the command line and boot. */
#include <string.h>

#include "base/log.h"
#include "base/startup_timing.h"
#include "vmm/api/ctl.h"
#include "vmm/api/sock_reaper.h"
#include "vmm/cli/cli.h"
#include "vmm/kvm/vm.h"
#include "vmm/run/run.h"
#include "vmm/vmm.h"

int main(int argc, char **argv)
{
	int64_t main_ns = startup_now_ns(); /* one clock read; used only with --timing */
	if (argc > 1 && !strcmp(argv[1], SOCK_REAPER_ARG))
		return sock_reaper_main(argc, argv); /* removes the control socket at exit */
	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return ctl_main(argc - 1, argv + 1); /* the control-socket client */
	if (argc > 1 && !strcmp(argv[1], "run"))
		return run_main(argc - 1, argv + 1, main_ns); /* one command in a VM */
	struct vm_config cfg;
	char err[256];
	switch (cli_parse(argc, argv, &cfg, err, sizeof(err))) {
	case CLI_EXIT_OK:
		return 0;
	case CLI_ERROR:
		log_error("%s", err);
		cli_free_config(&cfg);
		return EXIT_USAGE;
	case CLI_RUN:
		break;
	}
	int status = vmm_boot(&cfg, main_ns, NULL);
	cli_free_config(&cfg);
	return status;
}
