#!/usr/bin/env bash
# On a terminal: raw mode passes keys to the guest, and Ctrl-A x quits (status 0) while the
# guest is still running. A pseudo-terminal comes from util-linux's script(1).
source "$(dirname "$0")/lib.sh"
need_kvm
command -v script >/dev/null || skip "script(1) from util-linux is not installed"

log=$TEST_TMP/tty.log
: >"$log"
{
	for _ in $(seq 600); do
		grep -q 'probe: holding' "$log" && break
		sleep 0.1
	done
	printf '\001x'
} | timeout --signal=KILL 60 script -qefc \
	"$MINIVMM --kernel $FW/probe.elf --cmdline 'test=boot hold=serial'" "$log" >/dev/null
status=$?
grep -q 'probe: holding' "$log" || { cat "$log" >&2; fail "the probe never reached its hold point"; }
[ $status = 0 ] || { cat "$log" >&2; fail "exit status $status after Ctrl-A x, expected 0"; }
grep -q 'quit requested from the console' "$log" || { cat "$log" >&2; fail "no quit message"; }
# The guest never got the byte: Ctrl-A x is the VMM's, so the probe did not print PASS.
if grep -q '^probe: PASS' "$log"; then fail "Ctrl-A x reached the guest"; fi
exit 0
