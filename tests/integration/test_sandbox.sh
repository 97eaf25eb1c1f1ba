#!/usr/bin/env bash
# Every device under its thread's seccomp filter at once, RAM pre-faulted (--populate): the
# probe's demo (disk on io_uring, rng, ping over user-mode networking) with a balloon and a
# control socket, which the main thread removes at exit. A refused call would end the VMM with
# status 1.
source "$(dirname "$0")/lib.sh"
need_kvm

disk=$TEST_TMP/disk.img
truncate -s 16M "$disk"
sock=$TEST_TMP/vm.sock
run_vmm all 120 --kernel "$FW/probe.bzImage" --cpus 2 --memory 256M \
	--populate --net user,transport=mmio --disk "path=$disk" --rng --balloon --api-sock "$sock" \
	--cmdline "test=demo"
expect_probe_pass all
expect_line all out '^probe: demo blk .*verify=ok'
expect_line all out '^probe: demo summary: .* 4/4 pings answered'
expect_line all err '^minivmm: virtio-blk0: .*io_uring'
if ! grep -q 'seccomp: off (sanitizer build)' "$TEST_TMP/all.err"; then
	expect_line all err '^minivmm: seccomp: system-call allow-lists installed'
fi
[ ! -e "$sock" ] || fail "the control socket was not removed at exit"
