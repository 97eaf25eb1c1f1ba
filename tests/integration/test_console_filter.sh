#!/usr/bin/env bash
# The guest's escape sequences never reach the operator's terminal: the probe echoes its command
# line, which here holds an OSC 52 clipboard write and a colour. On a terminal (script(1)'s
# pseudo-terminal) they are shown as text ("^[") by default, and sent as they are with
# filter=off; a file or a pipe gets the guest's bytes unless filter=on.
source "$(dirname "$0")/lib.sh"
need_kvm
command -v script >/dev/null || skip "script(1) from util-linux is not installed"

ESC=$'\e' BEL=$'\a'
guest="test=boot x=${ESC}]52;c;SGk=${BEL}${ESC}[31mRED"
shown='x=^[]52;c;SGk=^G^[[31mRED'
has_esc() { grep -q "$ESC" "$1"; }

# A regular file (stdout): the guest's bytes.
run_vmm file 60 --kernel "$FW/probe.elf" --cmdline "$guest"
expect_status file 0
has_esc "$TEST_TMP/file.out" || fail "stdout to a file: the guest's ESC is gone"

# A pipe: the same by default, filtered with filter=on.
for mode in "" ",filter=on"; do
	out=$TEST_TMP/pipe$mode.out
	timeout --signal=KILL 60 "$MINIVMM" --kernel "$FW/probe.elf" --console "stdio$mode" \
		--cmdline "$guest" </dev/null 2>"$TEST_TMP/pipe.err" | cat >"$out"
	grep -q '^probe: PASS' "$out" || { cat "$out" "$TEST_TMP/pipe.err" >&2; fail "pipe$mode: no PASS"; }
	if [ -z "$mode" ]; then
		has_esc "$out" || fail "stdout to a pipe: the guest's ESC is gone"
	else
		! has_esc "$out" || fail "filter=on on a pipe: an ESC got through"
		grep -qF "$shown" "$out" || { cat -v "$out" >&2; fail "filter=on: not shown as text"; }
	fi
done

# A terminal: filtered by default (nothing of the log holds an ESC: minivmm prints none
# itself), the guest's bytes with filter=off.
for mode in "" ",filter=off"; do
	# What the terminal showed is script's output (its typescript's header names the command).
	log=$TEST_TMP/tty$mode.out
	timeout --signal=KILL 60 script -qefc \
		"$MINIVMM --kernel $FW/probe.elf --console stdio$mode --cmdline '$guest'" /dev/null \
		</dev/null >"$log" || { cat -v "$log" >&2; fail "tty$mode: status $?"; }
	grep -q 'probe: PASS' "$log" || { cat -v "$log" >&2; fail "tty$mode: no PASS"; }
	if [ -z "$mode" ]; then
		! has_esc "$log" || { cat -v "$log" >&2; fail "a terminal got the guest's ESC"; }
		grep -qF "$shown" "$log" || { cat -v "$log" >&2; fail "terminal: not shown as text"; }
	else
		has_esc "$log" || fail "filter=off on a terminal: the guest's ESC is gone"
	fi
done
exit 0
