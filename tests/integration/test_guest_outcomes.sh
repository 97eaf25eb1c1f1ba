#!/usr/bin/env bash
# Every guest outcome ends the VMM with its documented status: exit port value, i8042 reset,
# triple fault; and a failing probe is reported as such.
source "$(dirname "$0")/lib.sh"
need_kvm

for image in probe.bzImage probe.elf; do
	run_vmm "fail-$image" 30 --kernel "$FW/$image" --cmdline "test=no-such-test"
	expect_status "fail-$image" 1
	expect_line "fail-$image" out '^probe: FAIL unknown test'
done

run_vmm exit-port 30 --kernel "$FW/probe.elf" --cmdline "test=exit exit.status=42"
expect_status exit-port 42

run_vmm reset 30 --kernel "$FW/probe.elf" --cmdline "test=reset"
expect_status reset 0
expect_line reset err 'guest requested a reset'

run_vmm triple-fault 30 --kernel "$FW/probe.bzImage" --cmdline "test=triple-fault"
expect_status triple-fault 98
expect_line triple-fault err 'triple fault'
expect_line triple-fault err 'RIP=0x[0-9a-f]+'

# --console file=PATH and --quiet: the guest's output lands in the file, stderr stays silent.
run_vmm to-file 30 --kernel "$FW/probe.elf" --console "file=$TEST_TMP/serial.log" --quiet
expect_status to-file 0
grep -q '^probe: PASS' "$TEST_TMP/serial.log" || fail "console file lacks the probe's output"
[ ! -s "$TEST_TMP/to-file.out" ] || fail "stdout not empty with --console file="
[ ! -s "$TEST_TMP/to-file.err" ] || fail "stderr not empty with --quiet"
exit 0
