#!/usr/bin/env bash
# examples/first-byte's network timer (bench-snapshot.sh --net), with a UDP echo service on the
# host standing in for the guest (no /dev/kvm needed): --udp finds the first echo of its own
# datagrams (answer_us), --stop then kills a child that would run on, an answer with other
# bytes is no answer, and a child that never answers ends in a timeout with answer_us=-1; and
# --first-timeout ends a child that printed nothing by then.
source "$(dirname "$0")/lib.sh"
runs_no_vmm
command -v python3 >/dev/null || skip "python3 is not installed"
command -v cc >/dev/null || skip "no C compiler"

FB=$TEST_TMP/first-byte
cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$FB" "$ROOT/examples/first-byte.c" || fail "cannot build first-byte"
port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ECHO=$ROOT/tests/integration/udp_echo.py

# field LINES KEY: KEY's value in first-byte's output
field() { sed -n "s/.*\b$2=\(-\{0,1\}[0-9]*\).*/\1/p" <<<"$1" | head -n 1; }

# An echo service: answered, and the service (which never ends) killed by --stop, long before
# the time limit.
out=$(timeout 60 "$FB" --udp "127.0.0.1:$port" --stop --timeout 50 -- python3 "$ECHO" "$port" echo) ||
	fail "first-byte failed against an echo service: $out"
[ "$(field "$out" answer_us)" -gt 0 ] || fail "no answer_us: $out"
[ "$(field "$out" exit)" = 137 ] || fail "the service was not killed by --stop: $out"
[ "$(field "$out" timed_out)" = 0 ] || fail "timed out: $out"
[ "$(field "$out" answer_us)" -ge "$(field "$out" first_byte_us)" ] ||
	fail "answered before the service printed that it was bound: $out"

# --udp with --until: both must be seen before --stop kills.
out=$(timeout 60 "$FB" --udp "127.0.0.1:$port" --until up --stop --timeout 50 -- python3 "$ECHO" "$port" echo) ||
	fail "first-byte --until failed: $out"
[ "$(field "$out" until_us)" -ge 0 ] && [ "$(field "$out" answer_us)" -gt 0 ] || fail "until or answer missing: $out"

# Answers that are not the datagram sent: no answer, so the time limit ends it (status 1).
rc=0
out=$(timeout 60 "$FB" --udp "127.0.0.1:$port" --stop --timeout 2 -- python3 "$ECHO" "$port" wrong) || rc=$?
[ $rc = 1 ] || fail "status $rc with only wrong answers: $out"
[ "$(field "$out" answer_us)" = -1 ] && [ "$(field "$out" timed_out)" = 1 ] || fail "a wrong answer was taken: $out"

# A child that ends without answering: answer_us=-1 at once, not after the time limit.
rc=0
out=$(timeout 60 "$FB" --udp "127.0.0.1:$port" --timeout 50 -- echo hello) || rc=$?
[ $rc = 1 ] && [ "$(field "$out" answer_us)" = -1 ] && [ "$(field "$out" timed_out)" = 0 ] ||
	fail "status $rc for a child that never answered: $out"

# --first-timeout: a child that prints nothing is killed after it, long before --timeout (a silent
# guest, tests/linux/ab-boot.sh); one that printed in time runs on to its own end.
t0=$SECONDS
rc=0
out=$(timeout 60 "$FB" --first-timeout 1 --timeout 50 -- sleep 30) || rc=$?
[ $rc = 1 ] && [ "$(field "$out" first_byte_us)" = -1 ] && [ "$(field "$out" timed_out)" = 1 ] &&
	[ $((SECONDS - t0)) -lt 10 ] || fail "status $rc after $((SECONDS - t0))s for a silent child: $out"
out=$(timeout 60 "$FB" --first-timeout 1 --timeout 50 -- sh -c 'echo up; sleep 2; exit 3') ||
	fail "first-byte failed on a child that printed: $out"
[ "$(field "$out" exit)" = 3 ] && [ "$(field "$out" timed_out)" = 0 ] || fail "a child that printed was cut short: $out"

# A bad address is a usage error.
rc=0
"$FB" --udp nohost:1 -- true >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "status $rc for --udp nohost:1"
exit 0
