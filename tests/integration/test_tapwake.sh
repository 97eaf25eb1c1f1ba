#!/usr/bin/env bash
# examples/netbench/tapwake.c (no guest): both ways of receiving from a tap at a low rate, read()
# and the ring the removed rx-uring=on used (with 64 and with 1 read in flight), and minivmm's
# own tap backend linked in, and its virtio-net device on it (a fake
# driver, with and without further --net options), get every frame and report
# sane figures; a bad argument is a usage error (status 2). Its tap is its own and goes with it.
source "$(dirname "$0")/lib.sh"
runs_no_vmm
[ "$(id -u)" = 0 ] || skip "a tap needs root"
[ -c /dev/net/tun ] || skip "/dev/net/tun is missing"
command -v cc >/dev/null || skip "no C compiler"

command -v make >/dev/null || skip "no make"

# Built as `make examples` builds it (its backend and device modes link minivmm's objects).
TAPWAKE=$ROOT/build/examples/tapwake
make -s --no-print-directory -C "$ROOT" BUILD=build build/examples/tapwake >/dev/null ||
	fail "cannot build tapwake"
TAP=mvwk$$
on_exit "ip link del '$TAP' 2>/dev/null"

# wake MODE READS ARGS...: tapwake ARGS, 200 frames 500 us apart; the result line must say
# MODE and READS, count every frame, with positive CPU and ordered percentiles.
wake() {
	local mode=$1 reads=$2 out
	shift 2
	out=$(timeout 30 "$TAPWAKE" --tap "$TAP" --frames 200 --gap-us 500 "$@") ||
		fail "tapwake $*: status $?: $out"
	grep -Eq "^tapwake: mode=$mode reads=$reads frames=200 cpu_us_per_frame=[0-9.]+ p50_us=[0-9.]+ p90_us=[0-9.]+ p99_us=[0-9.]+$" <<<"$out" ||
		fail "tapwake $*: $out"
	awk -v l="$out" 'BEGIN {
		n = split(l, f, / |=/); for (i = 1; i < n; i++) v[f[i]] = f[i + 1]
		exit !(v["cpu_us_per_frame"] > 0 && v["p50_us"] > 0 && v["p50_us"] <= v["p90_us"] && v["p90_us"] <= v["p99_us"]) }' ||
		fail "tapwake $*: figures out of order: $out"
	echo "$out"
}
wake read 0 --mode read
wake ring 64 --mode ring
wake ring 1 --mode ring --reads 1
# minivmm's own tap backend: tapwake checks the backend's rx_path.
wake backend 0 --mode backend
# ... and its virtio-net device, a fake driver taking the frames out of guest memory; --net-opts
# reaches the device (its log line says so) and the mode says it.
wake device 0 --mode device
wake device,poll-us=50 0 --mode device --net-opts poll-us=50 2>"$TEST_TMP/poll.err"
grep -q 'poll 50 us' "$TEST_TMP/poll.err" || fail "--net-opts poll-us=50 did not reach the device: $(cat "$TEST_TMP/poll.err")"

rc=0
"$TAPWAKE" --mode poll >/dev/null 2>"$TEST_TMP/bad.err" || rc=$?
[ $rc = 2 ] && grep -q -- '--mode is read, ring, backend or device' "$TEST_TMP/bad.err" || fail "--mode poll: status $rc: $(cat "$TEST_TMP/bad.err")"
rc=0
"$TAPWAKE" --reads 65 >/dev/null 2>"$TEST_TMP/bad.err" || rc=$?
[ $rc = 2 ] || fail "--reads 65: status $rc: $(cat "$TEST_TMP/bad.err")"
ip link show "$TAP" >/dev/null 2>&1 && fail "tapwake left its tap behind"
exit 0
