# minivmm: `make` builds the VMM and the firmware guest; `make test` runs every test.
# Out-of-tree objects: BUILD=build (default) or BUILD=build-san SANITIZE=1.

BUILD    ?= build
CC       ?= gcc
SANITIZE ?= 0

CFLAGS_COMMON := -std=gnu11 -Wall -Wextra -Werror -O2 -g -D_GNU_SOURCE -I. -MMD -MP
ifeq ($(SANITIZE),1)
CFLAGS_COMMON += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS_SAN   := -fsanitize=address,undefined
endif
CFLAGS  ?=
CFLAGS  += $(CFLAGS_COMMON)
# libfdt, liburing and libseccomp are linked in (their Debian -dev packages ship PIC archives):
# each shared library costs the dynamic loader a lookup, mappings and relocations at every
# start (examples/bench-exec.sh); libc and libdl stay shared (libslirp is dlopen'ed).
LDLIBS  := -lpthread -Wl,-Bstatic -lfdt -luring -lseccomp -Wl,-Bdynamic -ldl
LDFLAGS += $(LDFLAGS_SAN)

VMM_SRCS  := $(wildcard vmm/*.c vmm/*/*.c base/*.c devices/*.c devices/virtio/*.c \
	devices/backends/*.c arch/x86/*.c)
VMM_OBJS  := $(VMM_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/seccomp_programs.o \
	$(BUILD)/obj/gen/run_init_blob.o
# Everything but main() is also linked into the unit tests.
LIB_OBJS  := $(filter-out $(BUILD)/obj/vmm/main.o,$(VMM_OBJS))
UNIT_SRCS := $(wildcard tests/unit/*.c)
# Probe code that is plain C (no drivers, no freestanding-only code), built for the host too.
FW_UNIT_SRCS := firmware/net/tcp.c firmware/net/vnet_hdr.c firmware/drivers/fuse.c
UNIT_OBJS := $(UNIT_SRCS:%.c=$(BUILD)/obj/%.o) $(FW_UNIT_SRCS:%.c=$(BUILD)/obj/%.o)

.PHONY: all deps demo test test-build unit-test integration-test linux-test sanitize-test \
	sanitize-build format check-format \
	check-layers check-pipes clean fuzz fuzz-replay fuzz-coverage mutants examples seccomp-cost snapshot-cost share-cost
all: $(BUILD)/minivmm firmware examples

$(BUILD)/minivmm: $(VMM_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# The seccomp programs of every role and needs, compiled from the one policy
# (vmm/sandbox/seccomp_rules.c) at build time by a host tool (plain flags: it runs here, not in the VMM).
SECCOMP_GEN_SRCS := tools/seccomp_gen.c vmm/sandbox/seccomp_rules.c vmm/sandbox/seccomp_aot.c
.PRECIOUS: %/tools/seccomp_gen %/gen/seccomp_programs.c
%/tools/seccomp_gen: $(SECCOMP_GEN_SRCS) vmm/sandbox/seccomp.h vmm/sandbox/seccomp_aot.h vmm/sandbox/seccomp_rules.h vmm/sandbox/seccomp_roles.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I. -o $@ $(SECCOMP_GEN_SRCS) -lseccomp
%/gen/seccomp_programs.c: %/tools/seccomp_gen
	@mkdir -p $(dir $@)
	./$< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/seccomp_programs.o: $(BUILD)/gen/seccomp_programs.c vmm/sandbox/seccomp_aot.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# The init of `minivmm run`'s guest (firmware/init/run_init.c): a static program, its bytes
# embedded in minivmm (run_init_blob, run_init_blob_end), which puts it in the initramfs it
# generates. Plain flags: it runs in the guest (no sanitizer runtime there).
$(BUILD)/run-init: firmware/init/run_init.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -static -s -o $@ $<
$(BUILD)/obj/gen/run_init_blob.o: $(BUILD)/run-init
	@mkdir -p $(dir $@)
	printf '\t.section .rodata\n\t.balign 16\n\t.globl run_init_blob, run_init_blob_end\nrun_init_blob:\n\t.incbin "%s"\nrun_init_blob_end:\n\t.section .note.GNU-stack,"",@progbits\n' $< | \
		$(CC) -c -x assembler -o $@ -

# What installing the filters costs, built ahead vs at run time (not part of `make test`).
seccomp-cost: $(BUILD)/tools/seccomp_cost
	./$(BUILD)/tools/seccomp_cost $(RUNS)
$(BUILD)/tools/seccomp_cost: $(BUILD)/obj/tools/seccomp_cost.o $(LIB_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# What --share (minivmm run's root) costs at start-up: virtiofsd started, handshake, stopped
# (not part of `make test`; root and virtiofsd needed, no /dev/kvm).
DIR ?= /
share-cost: $(BUILD)/tools/share_cost
	./$(BUILD)/tools/share_cost $(DIR) $(or $(RUNS),11)
$(BUILD)/tools/share_cost: $(BUILD)/obj/tools/share_cost.o $(LIB_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# What saving guest RAM costs, skipping never-touched pages or reading them (not part of `make test`).
GIB ?= 4
TOUCH_MIB ?= 16
snapshot-cost: $(BUILD)/tools/snapshot_cost
	./$(BUILD)/tools/snapshot_cost $(GIB) $(TOUCH_MIB)
$(BUILD)/tools/snapshot_cost: $(BUILD)/obj/tools/snapshot_cost.o $(LIB_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/unit-tests: $(UNIT_OBJS) $(LIB_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcriterion

include firmware/firmware.mk

# The start-up floor (examples/bench-boot.sh --startup): a program that does only what any KVM
# VMM must to get a serial byte out, and the four-instruction PVH guest both boot.
examples: $(BUILD)/examples/startup-floor $(BUILD)/examples/tiny-guest.elf \
	$(BUILD)/examples/tcpperf $(BUILD)/examples/first-byte $(BUILD)/examples/tapwake \
	$(BUILD)/examples/tapread

# Process start to the first console byte, a text, a UDP echo (bench-boot.sh, bench-snapshot.sh,
# the nested snapshot_user).
$(BUILD)/examples/first-byte: examples/first-byte.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -o $@ $<

# The host end of the probe's TCP (examples/netbench.sh --proto tcp, the nested probe_tcp).
$(BUILD)/examples/tcpperf: examples/netbench/tcpperf.c examples/netbench/tool.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -o $@ $<

# The tap tools whose backend and device modes link minivmm (all of it but main: its tap
# backend, event loop and virtio-net device, driven by examples/netbench/devguest.h);
# examples/netbench.sh builds tapread through this rule too. tapwake: a frame's wake-up at a low
# rate; tapread: the h2g ceiling's stand-ins (docs/performance.md).
NET_TOOL_DEPS := examples/netbench/tool.h examples/netbench/tap.h examples/netbench/devguest.h \
	$(LIB_OBJS)
$(BUILD)/examples/tapwake $(BUILD)/examples/tapread: $(BUILD)/examples/%: examples/netbench/%.c \
	$(NET_TOOL_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CFLAGS)) -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(LDLIBS)

$(BUILD)/examples/startup-floor: examples/startup-floor.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -o $@ $<

$(BUILD)/examples/tiny-guest.elf: examples/tiny-guest.S examples/tiny-guest.ld
	@mkdir -p $(dir $@)
	$(FW_CC) -nostdlib -static -no-pie -Wl,-T,examples/tiny-guest.ld -Wl,--build-id=none \
		-Wl,-z,noexecstack -o $@ $<

# Install the Debian packages the build and tests need (no-op when present).
deps:
	./scripts/install-deps.sh

# Main job: boot the bundled firmware guest (test=demo) with user-mode networking, a 64 MiB
# scratch disk and an rng, and show what it did.
DEMO_DISK := $(BUILD)/demo-disk.img
demo: all
	truncate -s 64M $(DEMO_DISK)
	./$(BUILD)/minivmm --kernel $(FW_OUT)/probe.bzImage --cpus 2 --memory 256M \
		--net user,transport=mmio --disk path=$(DEMO_DISK) --rng --cmdline "test=demo"

unit-test: $(BUILD)/unit-tests
	./$(BUILD)/unit-tests --jobs 2

integration-test: all
	MINIVMM=$(BUILD)/minivmm ./tests/integration/run.sh

# Stock Linux under minivmm, inside a QEMU TCG test VM that emulates AMD SVM (tests/linux).
linux-test: all
	MINIVMM=$(BUILD)/minivmm ./tests/linux/run.sh

# The same unit and integration tests against an ASan+UBSan build (MINIVMM_SANITIZED: the
# integration tests that start no minivmm skip themselves, lib.sh's runs_no_vmm).
sanitize-test: sanitize-build
	$(MAKE) BUILD=build-san SANITIZE=1 unit-test
	MINIVMM=build-san/minivmm MINIVMM_SKIP_STOCK_KERNEL=1 MINIVMM_SANITIZED=1 ./tests/integration/run.sh
sanitize-build:
	$(MAKE) BUILD=build-san SANITIZE=1 build-san/unit-tests build-san/minivmm

# `make test`: the source checks, then everything the stages run built at once (JOBS jobs, one
# per CPU), then the stages one after another (they time guests: never side by side).
JOBS ?= $(shell nproc)
test:
	$(MAKE) -j1 check-format check-layers check-pipes
	$(MAKE) -j$(JOBS) test-build
	$(MAKE) -j1 unit-test fuzz-replay integration-test linux-test sanitize-test
	@echo "ALL TESTS PASSED"

# Mutation check (not part of `make test`): every mutant in tests/mutants.txt, applied alone to a
# scratch copy in /tmp, must make its test fail. `make mutants MUTANTS="id ..."` runs some.
MUTANTS ?=
mutants:
	./scripts/mutants.sh $(MUTANTS)

# Coverage-guided fuzzing (not part of `make test`): every tests/fuzz/fuzz_<name>.c is a libFuzzer
# target linked with FUZZ_<name>_SRCS, run for FUZZ_SECONDS from tests/fuzz/corpus/<name>/;
# what it learns goes to build-fuzz/corpus/<name>/. `make fuzz-<name>` runs one target.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_BUILD   := build-fuzz
FUZZ_CFLAGS  := -std=gnu11 -Wall -Wextra -Werror -O1 -g -D_GNU_SOURCE -I. -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_virtqueue_SRCS := devices/virtio/virtqueue.c base/guest_mem.c base/thread_sandbox.c
FUZZ_json_SRCS := vmm/api/json.c
FUZZ_snapshot_state_SRCS := vmm/snapshot/snapshot_format.c
FUZZ_snapshot_state_CFLAGS := -Wno-gnu-variable-sized-type-not-at-end
FUZZ_virtio_mmio_SRCS := devices/virtio/mmio.c devices/virtio/virtio.c devices/virtio/virtqueue.c \
	devices/virtio/rng.c base/guest_mem.c base/thread_sandbox.c base/event_loop.c base/adaptive_poll.c base/log.c vmm/cli/options.c
FUZZ_virtio_pci_SRCS := devices/virtio/pci.c devices/pci.c devices/virtio/virtio.c \
	devices/virtio/virtqueue.c devices/virtio/rng.c base/guest_mem.c base/thread_sandbox.c base/event_loop.c base/adaptive_poll.c \
	base/log.c base/io_bus.c vmm/cli/options.c
# (arch/x86 less what needs KVM, libfdt or the legacy devices.)
FUZZ_kernel_loaders_SRCS := $(filter-out arch/x86/cpu.c arch/x86/cpuid.c arch/x86/host_cpuid.c arch/x86/machine.c \
	arch/x86/fdt.c arch/x86/pc_devices.c,$(wildcard arch/x86/*.c)) base/guest_mem.c base/thread_sandbox.c \
	base/startup_timing.c
# The device targets (fuzz_vdev.h): a device model over the virtio core, no transport.
FUZZ_VDEV_SRCS := devices/virtio/virtio.c devices/virtio/virtqueue.c base/guest_mem.c base/thread_sandbox.c \
	base/event_loop.c base/adaptive_poll.c base/log.c vmm/cli/options.c
FUZZ_virtio_rng_SRCS := devices/virtio/rng.c $(FUZZ_VDEV_SRCS)
FUZZ_virtio_blk_SRCS := devices/virtio/blk.c devices/backends/blk_io.c base/user_file.c $(FUZZ_VDEV_SRCS)
FUZZ_virtio_blk_LIBS := -lpthread -luring
FUZZ_virtio_net_SRCS := devices/virtio/net.c devices/virtio/net_timer_tx.c devices/virtio/net_poll.c \
	devices/virtio/net_tx_batch.c devices/backends/tap.c devices/backends/tap_uring.c \
	devices/backends/slirp.c devices/backends/slirp_lib.c devices/backends/slirp_gate.c \
	$(FUZZ_VDEV_SRCS)
FUZZ_virtio_net_LIBS := -lpthread -ldl -luring
FUZZ_virtio_balloon_SRCS := devices/virtio/balloon.c $(FUZZ_VDEV_SRCS)
# Per-target libFuzzer options. Device models warn on stderr about every broken driver: keep it
# closed (libFuzzer's and the sanitizers' reports still come out). The device targets are slow
# (a device per input) and need long inputs to get deep: no slow growth of the input length.
FUZZ_VDEV_FLAGS := -close_fd_mask=2 -len_control=0 -max_len=2048
FUZZ_virtio_mmio_FLAGS := -close_fd_mask=2
FUZZ_virtio_pci_FLAGS := -close_fd_mask=2
FUZZ_virtio_blk_FLAGS := $(FUZZ_VDEV_FLAGS)
FUZZ_virtio_net_FLAGS := $(FUZZ_VDEV_FLAGS)
FUZZ_virtio_rng_FLAGS := $(FUZZ_VDEV_FLAGS)
FUZZ_virtio_balloon_FLAGS := $(FUZZ_VDEV_FLAGS)
# Targets that need the device registry (every device kind's parser) link the whole VMM library.
FUZZ_LIB_SRCS := $(filter-out vmm/main.c,$(VMM_SRCS)) $(FUZZ_BUILD)/gen/seccomp_programs.c \
	tests/fuzz/run_init_stub.c
# (clang warns about two GNU-isms gcc accepts there: libseccomp's SCMP_A0 and struct kvm_msrs.)
FUZZ_LIB_CFLAGS := -Wno-missing-field-initializers -Wno-gnu-variable-sized-type-not-at-end
FUZZ_cli_SRCS := $(FUZZ_LIB_SRCS)
FUZZ_cli_LIBS := $(LDLIBS)
FUZZ_cli_CFLAGS := $(FUZZ_LIB_CFLAGS)
# The control socket's commands against a fake VM (directly or through a connection to the
# server); inputs long enough for many requests and for lines past API_MAX_LINE.
FUZZ_api_SRCS := $(FUZZ_LIB_SRCS)
FUZZ_api_LIBS := $(LDLIBS)
FUZZ_api_CFLAGS := $(FUZZ_LIB_CFLAGS)
FUZZ_api_FLAGS := -max_len=16384
FUZZ_snapshot_state_FLAGS := -max_len=32768

# Each source is compiled once for all targets (the two that link the whole VMM share ~90), with
# the union of the targets' flags; a target links its harness with the objects of its sources.
FUZZ_OBJ_CFLAGS := $(FUZZ_CFLAGS) $(FUZZ_LIB_CFLAGS) -MMD -MP
fuzz_objs = $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_$(1)_SRCS))
# (kept: intermediate files of a pattern rule would be deleted after every build)
.SECONDARY: $(sort $(foreach n,$(FUZZ_NAMES),$(call fuzz_objs,$(n))))
$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_OBJ_CFLAGS) -c -o $@ $<
-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)

.SECONDEXPANSION:
.PRECIOUS: $(FUZZ_BUILD)/fuzz_%
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $$(call fuzz_objs,$$*) $$(wildcard tests/fuzz/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_$*_CFLAGS) -o $@ $< $(filter %.o,$^) $(or $(FUZZ_$*_LIBS),-lpthread)

fuzz-%: $(FUZZ_BUILD)/fuzz_%
	@mkdir -p $(FUZZ_BUILD)/corpus/$* tests/fuzz/corpus/$*
	./$(FUZZ_BUILD)/fuzz_$* -max_total_time=$(FUZZ_SECONDS) $(FUZZ_$*_FLAGS) $(FUZZ_FLAGS) \
		$(FUZZ_BUILD)/corpus/$* tests/fuzz/corpus/$*

fuzz: $(FUZZ_NAMES:%=fuzz-%)

# Part of `make test`: every target builds, and runs each checked-in input once (-runs=0), so a
# harness whose invariant has gone stale or an input that once crashed fails the suite.
fuzz-replay-%: $(FUZZ_BUILD)/fuzz_%
	@./$(FUZZ_BUILD)/fuzz_$* -runs=0 $(FUZZ_$*_FLAGS) tests/fuzz/corpus/$* 2>$(FUZZ_BUILD)/replay-$*.log || \
		{ tail -n 40 $(FUZZ_BUILD)/replay-$*.log; echo "fuzz-replay: $* failed"; exit 1; }
	@echo "fuzz-replay: $* ok ($$(ls tests/fuzz/corpus/$* | wc -l) inputs)"

fuzz-replay: $(FUZZ_NAMES:%=fuzz-replay-%)

# What `make test` builds before its stages run (after the fuzz targets' definitions).
test-build: all $(BUILD)/unit-tests $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%) sanitize-build

# Source coverage of each target over its checked-in corpus (FUZZ_COV_LEARNED=1 adds what runs
# learned in build-fuzz/corpus): every input run once (-runs=0) by a build with
# -fprofile-instr-generate -fcoverage-mapping, reported for the files the target is meant to
# reach (FUZZ_<name>_COV) as one table; per file and function in build-fuzz-cov/<name>.txt.
FUZZ_COV_BUILD  := build-fuzz-cov
FUZZ_COV_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O1 -g -D_GNU_SOURCE -I. -fsanitize=fuzzer \
	-fprofile-instr-generate -fcoverage-mapping
FUZZ_virtqueue_COV := devices/virtio/virtqueue.c
FUZZ_json_COV := vmm/api/json.c
FUZZ_api_COV := vmm/api/api.c vmm/api/requests.c vmm/api/json.c
FUZZ_virtio_mmio_COV := devices/virtio/mmio.c devices/virtio/virtio.c devices/virtio/virtqueue.c \
	devices/virtio/rng.c
FUZZ_virtio_pci_COV := devices/virtio/pci.c devices/pci.c devices/virtio/virtio.c \
	devices/virtio/virtqueue.c devices/virtio/rng.c
FUZZ_cli_COV := vmm/cli/cli.c vmm/cli/options.c vmm/kinds/disk.c vmm/kinds/net.c
FUZZ_kernel_loaders_COV := arch/x86/boot.c arch/x86/bzimage.c arch/x86/elf.c arch/x86/pvh.c \
	arch/x86/initrd.c arch/x86/boot_params.c arch/x86/e820.c arch/x86/cmdline.c
FUZZ_virtio_blk_COV := devices/virtio/blk.c devices/backends/blk_io.c
FUZZ_virtio_net_COV := devices/virtio/net.c devices/virtio/net_timer_tx.c devices/virtio/net_poll.c \
	devices/virtio/net_tx_batch.c
FUZZ_virtio_rng_COV := devices/virtio/rng.c
FUZZ_virtio_balloon_COV := devices/virtio/balloon.c

.PRECIOUS: $(FUZZ_COV_BUILD)/fuzz_%
$(FUZZ_COV_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_$$*_SRCS) $$(wildcard tests/fuzz/*.h vmm/*/*.h \
		base/*.h devices/*.h devices/virtio/*.h devices/backends/*.h arch/x86/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_COV_CFLAGS) $(FUZZ_$*_CFLAGS) -o $@ $(filter %.c,$^) \
		$(or $(FUZZ_$*_LIBS),-lpthread)

fuzz-coverage-%: $(FUZZ_COV_BUILD)/fuzz_%
	./scripts/fuzz-coverage.sh run $* "$(FUZZ_$*_FLAGS)" $(or $(FUZZ_$*_COV),$(FUZZ_$*_SRCS))

fuzz-coverage: $(FUZZ_NAMES:%=fuzz-coverage-%)
	@./scripts/fuzz-coverage.sh table $(FUZZ_NAMES)

FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	clang-format -i $(FORMAT_SRCS)
check-format:
	clang-format --dry-run -Werror $(FORMAT_SRCS)
# The include arrows point one way, vmm/ -> arch/ -> devices/ -> base/ (check-layers.sh).
check-layers:
	./scripts/check-layers.sh
# No pipe into head, grep -q or an early awk exit in a script under pipefail (check-pipes.sh).
check-pipes:
	./scripts/check-pipes.sh

clean:
	rm -rf build build-san $(FUZZ_BUILD) $(FUZZ_COV_BUILD)

-include $(VMM_OBJS:.o=.d) $(UNIT_OBJS:.o=.d)
