#!/usr/bin/env bash
# bench-snapshot.sh: restore against cold boot. The probe's counting program (test=counter,
# a line "probe: counter=K ..." every counter.ms) is booted once with a control socket, saved
# with `minivmm ctl snapshot` once it counts, and shut down; then N rounds, order alternating,
# each of a cold boot of the same guest and a `minivmm --restore` of that snapshot, both timed
# by build/examples/first-byte from process start to the first "probe: counter=" line (for a
# cold boot: the guest booted, set up and counting; for a restore: the restored guest running).
# Prints the medians, their ratio, the snapshot's time and its size on disk against guest RAM.
# --net: the guest is the probe's UDP echo service instead (test=serve on a user-mode
# --net with a hostfwd rule from a free UDP port on 127.0.0.1), saved once it is ready, and each
# run is timed from process start to the first echo of a datagram first-byte sends to that
# port every 0.5 ms (--udp): the guest's first network answer, cold and restored.
# A benchmark, not a test (tests/integration/test_snapshot.sh checks that restores are right).
#
# usage: examples/bench-snapshot.sh [--runs N] [--memory SIZE] [--cpus N] [--timeout SEC] [--net]
set -euo pipefail

RUNS=11
MEMORY=256M
CPUS=1
TIMEOUT=30
NET=0

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
bench_args --runs=RUNS --memory=MEMORY --cpus=CPUS --timeout=TIMEOUT --net+NET -- "$@"
bench_positive RUNS CPUS TIMEOUT
bench_paths
bench_require minivmm probe cc kvm
HELPER=build/examples/first-byte
mkdir -p build/examples
cc -O2 -Wall -Wextra -Werror -o "$HELPER" examples/first-byte.c
bench_tmp

# 1 ms per line; the guest stops (passes) after 400 lines: a cold boot runs ~0.4 s, a restore
# the rest of them.
GUEST="test=counter counter.ms=1 counter.max=400"
READY='probe: counter=20 '
UNTIL=(--until 'probe: counter=')
NET_ARGS=()
BACKEND_ARGS=() # the restore's: a snapshot names no host resource
if [ "$NET" = 1 ]; then
	command -v python3 >/dev/null || die "--net needs python3 (to find a free UDP port)"
	PORT=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	GUEST="test=serve net.ip=10.0.2.15/24 net.peer=10.0.2.2 net.port=7000"
	NET_ARGS=(--net "user,hostfwd=udp:127.0.0.1:$PORT-:7000")
	BACKEND_ARGS=(--backend "0:user,hostfwd=udp:127.0.0.1:$PORT-:7000")
	READY='probe: serve ready'
	UNTIL=(--udp "127.0.0.1:$PORT" --stop)
fi
SNAP=$TMP/snap
SOCK=$TMP/api.sock
CMD_cold=("$MINIVMM" --kernel "$PROBE" --memory "$MEMORY" --cpus "$CPUS" "${NET_ARGS[@]}" --cmdline "$GUEST" --quiet)
CMD_restore=("$MINIVMM" --restore "$SNAP" "${BACKEND_ARGS[@]}" --quiet)

# The snapshot: boot with a socket, wait for the 20th line (--net: the service ready), save, stop.
"${CMD_cold[@]}" --api-sock "$SOCK" </dev/null >"$TMP/orig.out" 2>"$TMP/orig.err" &
BENCH_CHILD=$!
for _ in $(seq 300); do
	grep -q "^$READY" "$TMP/orig.out" 2>/dev/null && break
	kill -0 "$BENCH_CHILD" 2>/dev/null || die "the guest ended before it was ready: $(tail -n 3 "$TMP/orig.err")"
	sleep 0.01
done
grep -q "^$READY" "$TMP/orig.out" || die "the guest was not ready within 3 s (no '$READY')"
t0=$(date +%s%N)
"$MINIVMM" ctl --sock "$SOCK" snapshot "$SNAP" >"$TMP/ctl.out" 2>&1 || die "snapshot: $(cat "$TMP/ctl.out")"
snap_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
"$MINIVMM" ctl --sock "$SOCK" shutdown >/dev/null 2>&1 || true
wait "$BENCH_CHILD" || true
BENCH_CHILD=

# run NAME: one timed run, its until_us (--net: answer_us) appended to $TMP/NAME.dat
run() {
	local v="CMD_$1[@]" line us
	line=$("$HELPER" --timeout "$TIMEOUT" "${UNTIL[@]}" --out "$TMP/$1.out" \
		--err "$TMP/$1.err" -- "${!v}") || die "$1: $(tail -n 3 "$TMP/$1.err")"
	if [ "$NET" = 1 ]; then
		us=$(sed -n 's/^answer_us=//p' <<<"$line")
		[ "$us" -ge 0 ] || die "$1: no answer from the guest: $(tail -n 3 "$TMP/$1.err")"
	else
		us=$(sed -n 's/^until_us=//p' <<<"$line")
		[ "$us" -ge 0 ] || die "$1: no counter line: $(tail -n 3 "$TMP/$1.err")"
		grep -q '^probe: PASS' "$TMP/$1.out" || die "$1: the guest did not pass: $(tail -n 3 "$TMP/$1.out")"
	fi
	echo "$us" >>"$TMP/$1.dat"
}
for ((r = 0; r < RUNS; r++)); do
	if ((r % 2)); then run restore; run cold; else run cold; run restore; fi
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cold=$(median "$TMP/cold.dat")
restore=$(median "$TMP/restore.dat")
mem_kib=$(du -k "$SNAP/memory" | cut -f1)
state_b=$(stat -c %s "$SNAP/state.bin")
echo "bench-snapshot: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs ($(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)), kernel $(uname -r)"
echo "guest: $PROBE \"$GUEST\", --memory $MEMORY --cpus $CPUS; $RUNS rounds, order alternating"
echo "  cold:    ${CMD_cold[*]}"
echo "  restore: ${CMD_restore[*]}"
what="the first counter line"
[ "$NET" = 0 ] || what="the first UDP echo answer"
printf 'process start to %s, median (us): cold %s, restore %s: restore/cold %s\n' "$what" \
	"$cold" "$restore" "$(awk -v a="$restore" -v b="$cold" 'BEGIN { printf "%.2fx", a / b }')"
echo "snapshot: taken in ${snap_ms} ms (ctl round trip); memory file ${mem_kib} KiB on disk for $MEMORY of RAM, state ${state_b} bytes"
