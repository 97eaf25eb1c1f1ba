# Shared helpers for integration tests; sourced by each tests/integration/test_*.sh.
# A test exits 0 (pass), 77 (skipped, with the reason printed) or anything else (fail).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MINIVMM=${MINIVMM:-$ROOT/build/minivmm}
case "$MINIVMM" in /*) ;; *) MINIVMM=$ROOT/$MINIVMM ;; esac
FW=$ROOT/build/firmware
TEST_TMP=$(mktemp -d /tmp/minivmm-test.XXXXXX)
CLEANUP_CMDS=()

cleanup() {
	local c
	for c in "${CLEANUP_CMDS[@]}"; do eval "$c" || true; done
	rm -rf "$TEST_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Register a command to run at exit, also on failure.
on_exit() { CLEANUP_CMDS+=("$1"); }

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# kvm_usable: whether this host's /dev/kvm opens (it may be absent, or a node without a driver:
# a machine that is itself a PVM guest has none).
kvm_usable() {
	local fd
	[ -c /dev/kvm ] || return 1
	{ exec {fd}<>/dev/kvm; } 2>/dev/null || return 1
	exec {fd}>&-
}

# need_kvm: a test that boots guests under minivmm is skipped, saying why, where /dev/kvm is not
# usable (never a silent pass). `make linux-test` still runs minivmm there, on the nested
# test VM's /dev/kvm.
need_kvm() {
	kvm_usable && return 0
	if [ -e /dev/kvm ]; then
		skip "/dev/kvm is not a KVM device that opens on this host: no guest can run"
	fi
	skip "this host has no /dev/kvm: no guest can run"
}

# runs_no_vmm: a test of scripts and host tools that starts no minivmm (where it calls this):
# the sanitizer pass (`make sanitize-test` sets MINIVMM_SANITIZED=1) skips it, since the
# sanitized build changes nothing it runs and the plain pass ran it already.
runs_no_vmm() {
	[ "${MINIVMM_SANITIZED:-0}" = 1 ] || return 0
	skip "starts no minivmm here: the plain pass ran it, the sanitized build changes nothing it runs"
}

# run_vmm NAME TIMEOUT ARGS...: run minivmm with the serial console in $TEST_TMP/NAME.out and
# its stderr in $TEST_TMP/NAME.err; sets VMM_STATUS. A timeout (status 124) is a failure.
run_vmm() {
	local name=$1 limit=$2
	shift 2
	VMM_STATUS=0
	timeout --signal=KILL "$limit" "$MINIVMM" "$@" </dev/null >"$TEST_TMP/$name.out" \
		2>"$TEST_TMP/$name.err" || VMM_STATUS=$?
	if [ "$VMM_STATUS" = 137 ]; then
		show "$name"
		fail "$name: minivmm did not finish within ${limit}s"
	fi
}

# run_vmm_bg [--fifo] NAME ARGS...: minivmm in the background, console in $TEST_TMP/NAME.out,
# stderr in NAME.err; sets VMM_PID and kills it at exit. Stdin is /dev/null, or with --fifo the
# FIFO $TEST_TMP/NAME.in, held open for writing on fd 3 (write to >&3 to type on the console).
# VMM_WRAPPER (an array, default empty) is a command that execs the VMM (ip netns exec NS).
run_vmm_bg() {
	local in=/dev/null
	if [ "$1" = --fifo ]; then
		shift
		in=$TEST_TMP/$1.in
		mkfifo "$in"
	fi
	local name=$1
	shift
	# A simple command in the background: $! is the VMM itself (no subshell in between).
	${VMM_WRAPPER[@]+"${VMM_WRAPPER[@]}"} "$MINIVMM" "$@" <"$in" >"$TEST_TMP/$name.out" \
		2>"$TEST_TMP/$name.err" &
	VMM_PID=$!
	on_exit "kill -9 $VMM_PID 2>/dev/null"
	# The VMM opens its console input once a writer is there.
	[ "$in" = /dev/null ] || exec 3>"$in"
}

# wait_vmm NAME TIMEOUT: wait (at most TIMEOUT seconds) for the background VMM to exit; sets
# VMM_STATUS and closes fd 3.
wait_vmm() {
	if ! timeout "$2" tail -s 0.1 --pid="$VMM_PID" -f /dev/null; then
		show "$1"
		fail "$1: the VMM did not finish within ${2}s"
	fi
	VMM_STATUS=0
	wait "$VMM_PID" || VMM_STATUS=$?
	exec 3>&-
}

show() {
	echo "--- $1: serial console ---" >&2
	tail -n 40 "$TEST_TMP/$1.out" >&2
	echo "--- $1: stderr ---" >&2
	tail -n 20 "$TEST_TMP/$1.err" >&2
}

# expect_status NAME STATUS
expect_status() {
	if [ "$VMM_STATUS" != "$2" ]; then
		show "$1"
		fail "$1: exit status $VMM_STATUS, expected $2"
	fi
}

# expect_line NAME FILE(out|err) EXTENDED-REGEX
expect_line() {
	if ! grep -Eq -- "$3" "$TEST_TMP/$1.$2"; then
		show "$1"
		fail "$1: no line matching /$3/ in $2"
	fi
}

# expect_usage_error NAME REGEX ARGS...: minivmm started with ARGS refuses them with one line,
# "minivmm: error: ...REGEX", and exit status 2.
expect_usage_error() {
	local name=$1 regex=$2
	shift 2
	run_vmm "$name" 30 "$@"
	expect_status "$name" 2
	expect_line "$name" err "^minivmm: error: .*$regex"
	[ "$(wc -l <"$TEST_TMP/$name.err")" = 1 ] || { show "$name"; fail "$name: not one line"; }
}

# complete_lines FILE: the lines that have their newline (the console writes byte by byte, so
# the last one may still be coming).
complete_lines() { while IFS= read -r l; do printf '%s\n' "$l"; done <"$1"; }

# wait_line NAME FILE(out|err) REGEX [TRIES]: bounded wait (TRIES x 0.1 s, default 300) until a
# complete line matches; gives up early when the background VMM ($VMM_PID, if set) has exited.
wait_line() {
	for _ in $(seq "${4:-300}"); do
		complete_lines "$TEST_TMP/$1.$2" | grep -Eq -- "$3" && return 0
		if [ -n "${VMM_PID:-}" ] && ! kill -0 "$VMM_PID" 2>/dev/null; then
			# It may have written the line just before exiting, after the look above.
			complete_lines "$TEST_TMP/$1.$2" | grep -Eq -- "$3" && return 0
			break
		fi
		sleep 0.1
	done
	show "$1"
	fail "$1: no line matching /$3/ in $2"
}

# thread_ticks PID TID: CPU time (utime + stime) of one thread, in clock ticks.
thread_ticks() { awk '{print $14 + $15}' "/proc/$1/task/$2/stat"; }

# io_tid NAME: the I/O thread's id, from the start-up line in $TEST_TMP/NAME.err.
io_tid() { sed -n 's/^minivmm: io thread: tid \([0-9]*\),.*/\1/p' "$TEST_TMP/$1.err"; }

# count_lines NAME FILE REGEX
count_lines() { grep -Ec -- "$3" "$TEST_TMP/$1.$2" || true; }

# expect_probe_pass NAME: the probe's last result line is PASS and the VMM exited 0.
expect_probe_pass() {
	expect_line "$1" out '^probe: PASS'
	expect_status "$1" 0
}
