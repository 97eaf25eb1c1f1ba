#!/usr/bin/env bash
# --pin: each vCPU thread runs on exactly the host CPUs asked for, checked from the host side
# while the guest is running (the probe holds until it reads a byte on COM1). Each vCPU gets a
# single CPU, a different one each, and neither is the mask the VMM inherits (the main thread
# keeps that one), so a vCPU left unpinned shows.
source "$(dirname "$0")/lib.sh"
need_kvm

ncpu=$(nproc --all)
[ "$ncpu" -ge 2 ] || skip "needs at least 2 host CPUs, this host has $ncpu"
last=$((ncpu - 1))
inherited=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
[ "$inherited" != 0 ] && [ "$inherited" != "$last" ] ||
	skip "this test runs pinned to CPU $inherited: pinning could not be told from the default"

# The console input is held open on fd 3 until we choose to send the byte.
run_vmm_bg --fifo pin --kernel "$FW/probe.elf" --cpus 2 --pin "0=$last,1=0" \
	--cmdline "test=boot expect.cpus=2 hold=serial"
pid=$VMM_PID

# Wait (bounded) for the guest to report that it holds: every vCPU has run by then.
wait_line pin out '^probe: holding' 600

# The VMM's own report, then the kernel's view of each thread.
tid0=$(sed -n 's/^minivmm: vcpu 0: tid \([0-9]*\), host cpus \([0-9,-]*\) (pinned)$/\1/p' "$TEST_TMP/pin.err")
tid1=$(sed -n 's/^minivmm: vcpu 1: tid \([0-9]*\), host cpus \([0-9,-]*\) (pinned)$/\1/p' "$TEST_TMP/pin.err")
[ -n "$tid0" ] && [ -n "$tid1" ] || { show pin; fail "no pinned thread lines on stderr"; }
allowed() { awk '/^Cpus_allowed_list/ {print $2}' "/proc/$pid/task/$1/status"; }
allowed0=$(allowed "$tid0")
allowed1=$(allowed "$tid1")
main=$(allowed "$pid")
[ "$allowed0" = "$last" ] || fail "vCPU 0 thread $tid0 may run on '$allowed0', expected '$last'"
[ "$allowed1" = 0 ] || fail "vCPU 1 thread $tid1 may run on '$allowed1', expected '0'"
# --pin is per vCPU thread: the main thread keeps what it inherited
[ "$main" = "$inherited" ] || fail "the main thread may run on '$main', expected '$inherited'"

printf 'x' >&3
wait_vmm pin 30
expect_probe_pass pin
exit 0
