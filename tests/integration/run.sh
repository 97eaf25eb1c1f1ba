#!/usr/bin/env bash
# Run every integration test (or those named as arguments) and summarise.
# Each test runs in a session of its own with a time limit (MINIVMM_TEST_TIMEOUT seconds, default
# 600): past it, every process of that session gets SIGTERM (lib.sh turns that into an ordinary
# exit, so the test's cleanup runs; a nested `timeout` passes it on to what it runs), and after
# MINIVMM_TEST_GRACE (10) s more SIGKILL. The test is then a failure, "timed out after N s".
set -u
dir=$(cd "$(dirname "$0")" && pwd)
limit=${MINIVMM_TEST_TIMEOUT:-600}
grace=${MINIVMM_TEST_GRACE:-10}
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=("$dir"/test_*.sh)
log=$(mktemp /tmp/minivmm-run.XXXXXX)
sid="" timer=""
# Interrupted: stop the running test (its session does not see the terminal's Ctrl-C) first.
stop_test() {
	[ -z "$timer" ] || kill "$timer" 2>/dev/null
	[ -n "$sid" ] || return 0
	pkill -TERM -s "$sid"
	timeout "$grace" tail --pid="$sid" -f /dev/null
	pkill -KILL -s "$sid"
}
trap 'rm -f "$log"' EXIT
trap 'stop_test; exit 130' INT TERM

# run_test FILE: sets rc (124 when it ran out of time); its output is in $log. Without job
# control a background job is no process group leader, so setsid(1) does not fork: $! is the
# test's shell and its session id.
run_test() {
	setsid bash "$1" </dev/null >"$log" 2>&1 &
	sid=$!
	sleep "$limit" &
	timer=$!
	local ended=
	wait -n -p ended "$sid" "$timer"
	rc=$?
	if [ "$ended" = "$sid" ]; then
		kill "$timer" 2>/dev/null
		wait "$timer" 2>/dev/null
	else
		pkill -TERM -s "$sid"
		sleep "$grace" &
		timer=$!
		wait -n -p ended "$sid" "$timer"
		if [ "$ended" = "$sid" ]; then
			kill "$timer" 2>/dev/null
			wait "$timer" 2>/dev/null
		else
			pkill -KILL -s "$sid"
			wait "$sid"
		fi
		rc=124
	fi
	sid="" timer=""
}

pass=0 failed=0 skipped=0
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	start=$(date +%s%N)
	run_test "$t"
	out=$(cat "$log")
	ms=$((($(date +%s%N) - start) / 1000000))
	secs=$((ms / 1000)).$((ms % 1000 / 100))
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS  %-40s %6ss\n' "$name" "$secs" ;;
	77) skipped=$((skipped + 1)); printf 'SKIP  %-40s %s\n' "$name" "$(grep -m1 '^SKIP' <<<"$out")" ;;
	*) failed=$((failed + 1)); printf 'FAIL  %-40s %6ss\n' "$name" "$secs"
	   [ "$rc" = 124 ] && echo "    timed out after $limit s"
	   sed 's/^/    /' <<<"$out" ;;
	esac
done
echo "integration: $pass passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
