#!/usr/bin/env bash
# --console file=PATH,max-size=SIZE: the guest's output stops at the cap (the host's disk is
# not the guest's to fill), the VMM says so once and the guest runs on to its end. The probe
# echoes its command line, so a long one makes it print more than the cap.
source "$(dirname "$0")/lib.sh"
need_kvm

pad=$(head -c 3000 /dev/zero | tr '\0' x)
log=$TEST_TMP/console.log
run_vmm capped 60 --kernel "$FW/probe.elf" --console "file=$log,max-size=1K" \
	--cmdline "test=boot pad=$pad"
expect_status capped 0
[ "$(stat -c %s "$log")" = 1024 ] || fail "console file is $(stat -c %s "$log") bytes, cap 1024"
head -c 1024 "$log" | grep -q '^probe: cmdline="test=boot pad=xxx' || fail "not the guest's output"
[ "$(count_lines capped err 'console file reached its max-size \(1024 bytes\)')" = 1 ] ||
	fail "expected the cap logged once: $(cat "$TEST_TMP/capped.err")"

# Without max-size the same output is whole (the default cap is 64 MiB).
run_vmm whole 60 --kernel "$FW/probe.elf" --console "file=$log" --cmdline "test=boot pad=$pad"
expect_status whole 0
grep -q '^probe: PASS' "$log" || fail "uncapped console file lacks the probe's PASS"
[ "$(count_lines whole err 'max-size')" = 0 ] || fail "cap logged without reaching it"
exit 0
