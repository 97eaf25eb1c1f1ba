/* The VM's life: build it from a configuration, run it, tear it down, report the outcome. */
#include "vmm.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "vmm/api/api.h"
#include "arch/x86/boot.h"
#include "arch/x86/cpu.h"
#include "arch/x86/dsdt.h"
#include "arch/x86/fdt.h"
#include "arch/x86/layout.h"
#include "arch/x86/pc_devices.h"
#include "vmm/cli/cli.h"
#include "vmm/cli/console.h"
#include "vmm/api/ctl.h"
#include "devices/pci.h"
#include "devices/serial.h"
#include "vmm/cli/file_util.h"
#include "vmm/sandbox/file_limit.h"
#include "vmm/sandbox/jail.h"
#include "vmm/sandbox/seccomp.h"
#include "vmm/snapshot/snapshot.h"
#include "vmm/api/sock_reaper.h"
#include "vmm/kvm/vcpu.h"
#include "vmm/kvm/virtio_devices.h"
#include "vmm/kvm/vm.h"
#include "base/log.h"
#include "base/startup_timing.h"

#define CMDLINE_BUF_SIZE 65536

/* What the legacy PC devices (arch/x86/pc_devices.h) do to the VM. */
static void serial_tx(void *opaque, uint8_t byte)
{
	console_write(((struct vm *)opaque)->console, byte);
	startup_first_byte();
}

static void set_irq(void *opaque, int gsi, int level)
{
	vm_set_irq(opaque, gsi, level);
}

static void stop_with_status(void *opaque, int status)
{
	vm_request_stop_by_guest(opaque, status);
}

static void guest_reset(void *opaque)
{
	log_info("guest requested a reset");
	vm_request_stop(opaque, EXIT_GUEST_RESET);
}

static void guest_power_off(void *opaque)
{
	log_info("guest powered off (ACPI S5)");
	vm_request_stop(opaque, EXIT_GUEST_RESET);
}

static unsigned console_deliver(void *opaque, const uint8_t *buf, unsigned len)
{
	return serial_receive(((struct vm *)opaque)->serial, buf, len);
}

static void console_quit(void *opaque)
{
	log_info("quit requested from the console (Ctrl-A x)");
	vm_request_stop(opaque, 0);
}

static int add_legacy_devices(struct vm *vm, struct x86_pc_devices *d)
{
	const struct x86_pc_ops ops = {.serial_tx = serial_tx,
				       .set_irq = set_irq,
				       .stop = stop_with_status,
				       .reset = guest_reset,
				       .power_off = guest_power_off,
				       .opaque = vm};
	if (x86_pc_devices_create(d, &vm->pio, &ops))
		return -1;
	vm->serial = &d->serial;
	return 0;
}

static int load_guest(struct vm *vm, const struct vm_config *cfg, const char *cmdline,
		      const struct virtio_devices *devs, struct boot_entry *entry)
{
	uint8_t *dtb = NULL;
	size_t dtb_size = 0;
	uint8_t *kernel = NULL, *initrd = NULL;
	size_t kernel_size = 0, initrd_size = 0;
	int rc = -1;
	/* Distribution kernels find virtio-mmio devices only through ACPI; the device tree lists
	 * the same windows. */
	_Static_assert(VIRTIO_MMIO_MAX_DEVS <= DSDT_MAX_MMIO_DEVICES, "the DSDT lists them all");
	struct dsdt_mmio_device mmio[DSDT_MAX_MMIO_DEVICES];
	struct dsdt_config acpi_devices = {.virtio_mmio = mmio};
	for (int i = 0; i < devs->nr; i++) {
		const struct virtio_slot *slot = &devs->slots[i];
		if (slot->cfg->transport != TRANSPORT_MMIO ||
		    acpi_devices.nr_virtio_mmio == DSDT_MAX_MMIO_DEVICES)
			continue;
		mmio[acpi_devices.nr_virtio_mmio++] =
		    (struct dsdt_mmio_device){.base = slot->mmio.base,
					      .size = VIRTIO_MMIO_SIZE,
					      .gsi = (uint32_t)slot->mmio.irq};
	}
	if (read_whole_file(cfg->kernel_path, "kernel", cfg->memory_bytes, &kernel, &kernel_size))
		goto out;
	if (cfg->initrd_path &&
	    read_whole_file(cfg->initrd_path, "initrd", cfg->memory_bytes, &initrd, &initrd_size))
		goto out;
	startup_mark(STARTUP_LOAD);
	struct boot_args args = {
	    .kernel = kernel,
	    .kernel_size = kernel_size,
	    .initrd = initrd,
	    .initrd_size = initrd_size,
	    .cmdline = cmdline,
	    .protocol = cfg->protocol,
	    .nr_cpus = cfg->nr_cpus,
	    .acpi_devices = &acpi_devices,
	};
	if (cfg->dump_dtb_path || cfg->pass_dtb) {
		if (x86_fdt_build(&vm->mem, vm->nr_vcpus, &acpi_devices, &dtb, &dtb_size))
			goto out;
		if (cfg->dump_dtb_path &&
		    write_whole_file(cfg->dump_dtb_path, "--dump-dtb", dtb, dtb_size))
			goto out;
		if (cfg->pass_dtb) {
			args.dtb = dtb;
			args.dtb_size = dtb_size;
		}
	}
	char err[256];
	if (x86_boot_load(&vm->mem, &args, entry, err, sizeof(err))) {
		log_error("%s: %s", cfg->kernel_path, err);
		goto out;
	}
	if (x86_setup_boot_tables(&vm->mem)) {
		log_error("guest memory too small for the boot page tables");
		goto out;
	}
	startup_mark(STARTUP_TABLES);
	log_info("loaded %s as %s, entry 0x%llx%s", cfg->kernel_path, entry->format,
		 (unsigned long long)entry->rip,
		 entry->protocol == BOOT_PVH ? " (PVH, 32-bit)" : " (64-bit)");
	rc = 0;
out:
	free(kernel);
	free(initrd);
	free(dtb);
	return rc;
}

static void log_io_thread(struct vm *vm)
{
	cpu_set_t actual;
	char list[256] = "?";
	if (sched_getaffinity(vm->loop.tid, sizeof(actual), &actual) == 0)
		format_cpu_list(&actual, list, sizeof(list));
	log_info("io thread: tid %d, host cpus %s%s", (int)vm->loop.tid, list,
		 vm->cfg->io_pinned ? " (pinned)" : "");
}

/* The I/O thread narrows its own system calls before it handles an event. */
static int install_io_filter(void *opaque)
{
	char err[160];
	startup_mark(STARTUP_THREADS); /* the main thread waits for this one */
	int rc = seccomp_install(opaque, SECCOMP_IO, err, sizeof(err));
	startup_mark(STARTUP_SECCOMP);
	if (rc == 0)
		return 0;
	log_error("I/O thread: %s", err);
	return -1;
}

/* Block until a guest outcome or a termination signal. */
static void wait_for_stop(struct vm *vm, int sig_fd)
{
	struct pollfd fds[2] = {{.fd = vm->stop_fd, .events = POLLIN},
				{.fd = sig_fd, .events = POLLIN}};
	while (!vm_is_stopping(vm)) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
				log_info("stopping on signal %s", strsignal((int)si.ssi_signo));
				vm_request_stop(vm, 128 + (int)si.ssi_signo);
			}
		}
	}
}

/* Termination signals are read by the main thread only (the returned signalfd); vCPU threads
 * inherit the mask. */
static int block_stop_signals(void)
{
	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGALRM); /* minivmm run --timeout */
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	int sig_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
	signal(SIGPIPE, SIG_IGN);
	return sig_fd;
}

static void attach_console(struct vm *vm, struct console *console)
{
	vm->console = console;
	console_take_input(console, console_deliver, vm); /* unless a virtio console took it */
	console->quit = console_quit;
	console->opaque = vm;
}

/* Everything is open and bound: nothing below needs the file system or root. */
static int enter_jail(const struct vm_config *cfg)
{
	char err[256];
	if (!cfg->jail.enabled)
		return 0;
	if (jail_enter(&cfg->jail, err, sizeof(err))) {
		log_error("%s", err);
		return -1;
	}
	log_info("jail: chroot %s, uid %u, gid %u", cfg->jail.dir, (unsigned)cfg->jail.uid,
		 (unsigned)cfg->jail.gid);
	return 0;
}

/* Everything is open and loaded: from here on, only what running the guest needs. Every thread
 * gets the process filter now; the I/O and vCPU threads narrow theirs as they start, the main
 * thread once it has started them all (start_guest). */
static int install_process_filter(struct vm *vm, const struct vm_config *cfg,
				  struct seccomp_policy *sandbox, bool control_socket)
{
	char err[256];
	virtio_devices_seccomp_needs(cfg, &sandbox->needs);
	sandbox->needs.control_socket = control_socket;
	if (cfg->seccomp && seccomp_install(sandbox, SECCOMP_PROCESS, err, sizeof(err))) {
		log_error("%s (--seccomp off runs without the filter)", err);
		return -1;
	}
	vm->seccomp = cfg->seccomp ? sandbox : NULL;
	if (cfg->seccomp)
		seccomp_arm_thread_filters(sandbox); /* blk workers, console input, populate */
	startup_mark(STARTUP_SECCOMP);
	log_info("seccomp: %s", cfg->seccomp	       ? "system-call allow-lists installed"
				: seccomp_default_on() ? "off (--seccomp off)"
						       : "off (sanitizer build)");
	return 0;
}

/* The I/O thread, the vCPUs (*ran once they run), pre-faulting, the main thread's filter. */
static int start_guest(struct vm *vm, const struct vm_config *cfg, struct seccomp_policy *sandbox,
		       bool *ran)
{
	char err[256];
	if (event_loop_start(&vm->loop, cfg->io_pinned ? &cfg->io_pin_set : NULL,
			     vm->seccomp ? install_io_filter : NULL, sandbox))
		return -1;
	log_io_thread(vm);
	startup_mark(STARTUP_THREADS); /* the last main-thread mark: vCPU 0 takes over */
	if (vcpus_start(vm))
		return -1;
	*ran = true;
	guest_mem_start_populate(&vm->mem);
	if (vm->seccomp && seccomp_install(sandbox, SECCOMP_MAIN, err, sizeof(err))) {
		log_error("main thread: %s", err);
		return -1;
	}
	return 0;
}

/* Undo what runs (threads, control socket, legacy devices), reporting the devices' counters. */
static void stop_guest(struct vm *vm, struct api_server *api, struct virtio_devices *virtio,
		       struct x86_pc_devices *legacy, int status)
{
	vm_request_stop(vm, status);
	vcpus_stop(vm);
	if (vm->console)
		console_stop_input(vm->console); /* it may feed a virtio console, destroyed next */
	/* What the guest queued before it stopped (its last output, a `minivmm run` command's
	 * last bytes before the exit port's status) is handled, not dropped: the kicks are ready
	 * in the loop's next pass. Twice: one pass may not take every ready event. */
	for (int i = 0; i < 2 && vm->loop.running && !vm->loop.start_failed; i++)
		event_loop_flush(&vm->loop, 1000);
	event_loop_stop(&vm->loop);
	api_server_stop(api);
	virtio_devices_report(virtio);
	const struct adaptive_poll *ap = &vm->loop.poll;
	if (ap->max_ns)
		log_info("io thread: adaptive polling up to %llu us: %llu polls, %llu found work, "
			 "%llu us polled, window %llu ns",
			 (unsigned long long)ap->max_ns / 1000, (unsigned long long)ap->polls,
			 (unsigned long long)ap->polls_found,
			 (unsigned long long)ap->poll_ns / 1000, (unsigned long long)ap->window_ns);
	x86_pc_devices_destroy(legacy);
}

/* --restore: the saved state onto the new VM; --paused keeps the vCPUs parked until "resume". */
static int restore(struct vm *vm, const struct snapshot_state *snap, const struct timespec *t0)
{
	char err[512];
	if (!snap)
		return 0;
	if (snapshot_apply(vm, snap, err, sizeof(err))) {
		log_error("cannot restore: %s", err);
		return -1;
	}
	vm->pause_requested = vm->cfg->start_paused;
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("restored %s (%llu MiB, %d vCPUs) in %.1f ms%s", vm->cfg->restore_dir,
		 (unsigned long long)(vm->mem.ram_size >> 20), vm->nr_vcpus,
		 (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6,
		 vm->cfg->start_paused ? "; paused" : "");
	return 0;
}

int vmm_boot(struct vm_config *cfg_in, int64_t main_ns, struct vmm_outcome *outcome)
{
	struct vm_config cfg = *cfg_in; /* the caller keeps (and frees) its own */
	if (cfg.timing)
		startup_timing_enable(main_ns);
	startup_mark(STARTUP_ARGS);
	log_set_quiet(cfg.quiet);
	int sig_fd = block_stop_signals();

	static struct vm vm; /* large (vCPU table); static keeps it off the stack */
	static struct virtio_devices virtio;
	struct x86_pc_devices legacy; /* owned by main for the VM's lifetime */
	struct console console;
	struct boot_entry entry;
	struct api_server *api = NULL;
	struct seccomp_policy sandbox = {.on_violation = console_restore_terminal};
	int status = EXIT_USAGE;
	bool ran = false; /* the guest started: only then is the exit status worth a line */

	/* The guest's command line: the user's, then entries announcing virtio-mmio devices. */
	char *cmdline = calloc(1, CMDLINE_BUF_SIZE);
	if (!cmdline) {
		log_error("out of memory");
		return EXIT_VMM_ERROR;
	}
	snprintf(cmdline, CMDLINE_BUF_SIZE, "%s", cfg.cmdline);
	struct timespec restore_t0;
	clock_gettime(CLOCK_MONOTONIC, &restore_t0);
	struct snapshot_state *snap = cfg.restore_dir ? snapshot_restore_open(&cfg) : NULL;
	if (cfg.restore_dir && !snap)
		goto out_vm;
	int vm_rc = vm_create(&vm, &cfg);
	if (snap)
		close(cfg.memory_fd); /* the mapping holds the file */
	if (vm_rc)
		goto out_vm;
	/* The console file first of the user's files, so a bad one is the only line printed. */
	if (console_open(&console, &cfg))
		goto out_vm;
	vm.console = &console; /* a virtio console writes to it */
	/* The PCI bus always exists: the ACPI tables describe it. */
	static struct pci_bus pci;
	pci_bus_init(&pci, &vm.mmio, PCI_MMIO_BASE, PCI_MMIO_END);
	if (pci_bus_register(&pci, &vm.pio, PCI_ECAM_BASE))
		goto out_console;
	vm.pci = &pci;
	if (virtio_devices_create(&virtio, &vm, cmdline, CMDLINE_BUF_SIZE))
		goto out_devices;
	startup_mark(STARTUP_DEVICES);
	vm.virtio = &virtio;
	if (!snap && load_guest(&vm, &cfg, cmdline, &virtio, &entry))
		goto out_devices;
	attach_console(&vm, &console);
	if (add_legacy_devices(&vm, &legacy))
		goto out_devices;
	startup_mark(STARTUP_DEVICES);
	status = EXIT_VMM_ERROR;
	if (vcpus_create(&vm, snap ? NULL : &entry))
		goto out_vcpus;
	if (restore(&vm, snap, &restore_t0)) {
		status = EXIT_USAGE; /* the snapshot does not fit this host or these files */
		goto out_vcpus;
	}
	if (console_start_input(&console))
		goto out_vcpus;
	if (cfg.api_sock_path && !(api = api_server_start(&vm, cfg.api_sock_path))) {
		status = EXIT_USAGE;
		goto out_vcpus;
	}
	/* Every file is open: none may grow past what the VM needs (before the jail: /proc). */
	char limit_err[160];
	if (cfg.seccomp && file_limit_apply(file_limit_for(&cfg), limit_err, sizeof(limit_err))) {
		log_error("%s", limit_err);
		goto out_vcpus;
	}
	if (enter_jail(&cfg)) {
		status = EXIT_USAGE;
		goto out_vcpus;
	}
	startup_mark(STARTUP_OTHER);
	if (install_process_filter(&vm, &cfg, &sandbox, api != NULL) ||
	    start_guest(&vm, &cfg, &sandbox, &ran))
		goto out_vcpus;
	wait_for_stop(&vm, sig_fd);
	status = vm.exit_status;
out_vcpus:
	stop_guest(&vm, api, &virtio, &legacy, status);
out_devices:
	/* The bus first: it unmaps the devices' BARs, which the devices own. */
	if (vm.pci)
		pci_bus_destroy(vm.pci);
	virtio_devices_destroy(&virtio);
out_console:
	console_close(&console);
out_vm:
	vm_destroy(&vm);
	free(cmdline);
	snapshot_state_free(snap);
	if (sig_fd >= 0)
		close(sig_fd);
	if (ran && !(outcome && outcome->quiet_status))
		log_info("exit status %d", status);
	startup_timing_report();
	if (outcome) {
		outcome->ran = ran;
		outcome->by_guest = vm.exit_by_guest;
	}
	return status;
}
