#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2054 # CMD_*/EXPECT_* are read through ${!name}; -M takes commas
# bench-virtio.sh: the probe's test=virtio-bench on a virtio-rng device, for each transport
# minivmm offers (mmio and pci), and with --qemu the same guest under QEMU (microvm for mmio,
# pc for pci), side by side in one run. Per configuration:
#   notifications/s  one 64-byte buffer at a time, every one kicked, completion polled
#   interrupts/s     the same with a used-buffer interrupt per buffer, the guest halted until it
#   irq round trip   mean time from adding a buffer to its interrupt having been handled (us)
#   kicks, irqs /1000 buffers  vbench.m buffers streamed through a full 256-entry queue, the
#                    driver following the spec's suppression rules, with and without
#                    VIRTIO_RING_F_EVENT_IDX, and the ratio without/with
#   stalls           times the device stopped with the ring full until the guest kicked anyway
#                    (0 for a correct device; each is a 50 ms gap)
# A benchmark, not a test: it prints medians over N runs of every configuration, plus the
# VMM's own counters when minivmm prints them at exit (median over runs too).
#
# usage: examples/bench-virtio.sh [--runs N] [--qemu] [--n N] [--m M] [--timeout SEC] [--json]
#   --n N  buffers for the notification and interrupt rates (default 2000)
#   --m M  buffers streamed per mode (default 4096)
set -euo pipefail

RUNS=3
QEMU_TOO=0
N=2000
M=4096
TIMEOUT=120
JSON=0

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
bench_args --runs=RUNS --qemu+QEMU_TOO --n=N --m=M --timeout=TIMEOUT --json+JSON -- "$@"
bench_positive RUNS N M TIMEOUT

bench_paths
NEEDS=(minivmm probe kvm)
[ "$QEMU_TOO" = 0 ] || NEEDS+=(qemu)
bench_require "${NEEDS[@]}"

bench_tmp # BENCH_CHILD: the VMM running

CMDLINE="test=virtio-bench vbench.n=$N vbench.m=$M"
CMD_minivmm_mmio=("$MINIVMM" --kernel "$PROBE" --rng,transport=mmio --cmdline "$CMDLINE"
	--console stdio)
CMD_minivmm_pci=("$MINIVMM" --kernel "$PROBE" --rng,transport=pci --cmdline "$CMDLINE"
	--console stdio)
# microvm adds virtio_mmio.device= words only without ACPI; the probe drives version 2 only.
CMD_qemu_mmio=("$QEMU" -accel kvm -M microvm,acpi=off,x-option-roms=off,isa-serial=on
	-nodefaults -no-user-config -nographic -serial stdio
	-global virtio-mmio.force-legacy=false -device virtio-rng-device
	-kernel "$PROBE" -append "$CMDLINE" -device isa-debug-exit,iobase=0xf4)
CMD_qemu_pci=("$QEMU" -accel kvm -M pc -nodefaults -no-user-config -nographic -serial stdio
	-device virtio-rng-pci,disable-legacy=on
	-kernel "$PROBE" -append "$CMDLINE" -device isa-debug-exit,iobase=0xf4)
# Exit status that means the probe passed: QEMU's isa-debug-exit turns the probe's 0 into 1.
EXPECT_minivmm_mmio=0
EXPECT_minivmm_pci=0
EXPECT_qemu_mmio=1
EXPECT_qemu_pci=1

# Run configuration $1 once; 0: passed, 1: failed.
# Appends its vbench lines to $TMP/$1.vb and the VMM's counters to $TMP/$1.ctr.
run_one() {
	local name=$1 v="CMD_${1//-/_}[@]" e="EXPECT_${1//-/_}" rc=0
	timeout --foreground -k 5 "$TIMEOUT" "${!v}" </dev/null >"$TMP/out" 2>"$TMP/err" &
	BENCH_CHILD=$!
	wait "$BENCH_CHILD" || rc=$?
	BENCH_CHILD=
	if [ "$rc" != "${!e}" ] || ! grep -q '^probe: PASS' "$TMP/out"; then
		echo "bench-virtio: $name failed (exit $rc)" >&2
		echo "--- guest output:" >&2; tr -d '\r' <"$TMP/out" >&2
		echo "--- stderr:" >&2; cat "$TMP/err" >&2
		return 1
	fi
	tr -d '\r' <"$TMP/out" | grep '^probe: vbench .*kicks_per_1000=' >>"$TMP/$name.vb"
	# "minivmm: virtio-rng0: kicks N (...), interrupts M" (or "notifications N, ...")
	sed -n 's/^minivmm: virtio-rng0: \(kicks\|notifications\) \([0-9]*\).*interrupts \([0-9]*\).*/\2 \3/p' \
		"$TMP/err" >>"$TMP/$name.ctr"
	return 0
}

NAMES=(minivmm-mmio minivmm-pci)
[ "$QEMU_TOO" = 0 ] || NAMES+=(qemu-mmio qemu-pci)
ACTIVE=()
for ((i = 1; i <= RUNS; i++)); do
	[ ! -t 2 ] || printf '\rrun %d/%d' "$i" "$RUNS" >&2
	for n in "${NAMES[@]}"; do
		[ "$i" = 1 ] || [[ " ${ACTIVE[*]} " == *" $n "* ]] || continue
		run_one "$n" || exit 1
		[ "$i" != 1 ] || ACTIVE+=("$n")
	done
done
[ ! -t 2 ] || printf '\r%*s\r' 20 '' >&2

# field $3 of the vbench lines of configuration $1 with event_idx=$2 ("any": both), median
median_of() {
	local f="$TMP/$1.vb" mode=$2 key=$3
	awk -v mode="$mode" -v key="$key" '{
		m = ""; val = ""
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "event_idx") m = kv[2]
			if (kv[1] == key) val = kv[2]
		}
		if (val != "" && (mode == "any" || m == mode)) print val
	}' "$f" | sort -g | awk '{ v[NR] = $1 }
		END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
		      else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
median_col() { # median of column $2 of file $1 ("-" when empty)
	[ -s "$1" ] || { echo -; return; }
	awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "-" || b == "-") print "-"; else if (b + 0 == 0) print (a + 0 == 0 ? "1.0" : "inf");
		else printf "%.1f\n", a / b }'
}

declare -A R
FIELDS=(notify_per_s irq_per_s irq_rtt_us)
for n in "${ACTIVE[@]}"; do
	for k in "${FIELDS[@]}"; do R[$n.$k]=$(median_of "$n" any "$k"); done
	for mode in on off; do
		for k in kicks_per_1000 irqs_per_1000 stalls; do
			R[$n.$k.$mode]=$(median_of "$n" "$mode" "$k")
		done
	done
	R[$n.kick_ratio]=$(ratio "${R[$n.kicks_per_1000.off]}" "${R[$n.kicks_per_1000.on]}")
	R[$n.irq_ratio]=$(ratio "${R[$n.irqs_per_1000.off]}" "${R[$n.irqs_per_1000.on]}")
	R[$n.vmm_kicks]=$(median_col "$TMP/$n.ctr" 1)
	R[$n.vmm_irqs]=$(median_col "$TMP/$n.ctr" 2)
done

DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
CPU=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
if [ "$JSON" = 1 ]; then
	num() { [ "$1" = - ] && printf null || printf '%s' "$1"; }
	printf '{\n  "date": "%s",\n  "machine": {"nproc": %d, "cpu": "%s", "kernel": "%s"},\n' \
		"$DATE" "$(nproc)" "$CPU" "$(uname -r)"
	printf '  "guest": "%s",\n  "cmdline": "%s",\n  "runs": %d,\n  "configs": {' \
		"$PROBE" "$CMDLINE" "$RUNS"
	sep=
	for n in "${ACTIVE[@]}"; do
		cmd=$(cmd_of "$n" | sed 's/\\/\\\\/g; s/"/\\"/g')
		printf '%s\n    "%s": {\n      "command": "%s",\n' "$sep" "$n" "$cmd"
		printf '      "notify_per_s": %s, "irq_per_s": %s, "irq_rtt_us": %s,\n' \
			"$(num "${R[$n.notify_per_s]}")" "$(num "${R[$n.irq_per_s]}")" \
			"$(num "${R[$n.irq_rtt_us]}")"
		for mode in on off; do
			printf '      "event_idx_%s": {"kicks_per_1000": %s, "irqs_per_1000": %s, "stalls": %s},\n' \
				"$mode" "$(num "${R[$n.kicks_per_1000.$mode]}")" \
				"$(num "${R[$n.irqs_per_1000.$mode]}")" "$(num "${R[$n.stalls.$mode]}")"
		done
		printf '      "kicks_ratio_off_on": %s, "irqs_ratio_off_on": %s,\n' \
			"$(num "${R[$n.kick_ratio]}")" "$(num "${R[$n.irq_ratio]}")"
		printf '      "vmm_counters": {"kicks": %s, "interrupts": %s}\n    }' \
			"$(num "${R[$n.vmm_kicks]}")" "$(num "${R[$n.vmm_irqs]}")"
		sep=,
	done
	printf '\n  }\n}\n'
	exit 0
fi

echo "bench-virtio: $DATE, $(nproc) CPUs ($CPU), kernel $(uname -r)"
echo "guest: $PROBE, cmdline \"$CMDLINE\", median of $RUNS runs"
echo "commands:"
for n in "${ACTIVE[@]}"; do echo "  $n: $(cmd_of "$n")"; done
echo
printf '%-13s %9s %9s %8s | %-21s | %-21s | %-13s | %s\n' "" "notify/s" "irq/s" "irq rtt" \
	"kicks/1000 buffers" "irqs/1000 buffers" "stalls" "VMM counters"
printf '%-13s %9s %9s %8s | %6s %6s %7s | %6s %6s %7s | %6s %6s | %s\n' "config" "" "" "us" \
	"on" "off" "off/on" "on" "off" "off/on" "on" "off" "kicks irqs"
for n in "${ACTIVE[@]}"; do
	printf '%-13s %9s %9s %8s | %6s %6s %7s | %6s %6s %7s | %6s %6s | %s %s\n' "$n" \
		"${R[$n.notify_per_s]}" "${R[$n.irq_per_s]}" "${R[$n.irq_rtt_us]}" \
		"${R[$n.kicks_per_1000.on]}" "${R[$n.kicks_per_1000.off]}" "${R[$n.kick_ratio]}" \
		"${R[$n.irqs_per_1000.on]}" "${R[$n.irqs_per_1000.off]}" "${R[$n.irq_ratio]}" \
		"${R[$n.stalls.on]}" "${R[$n.stalls.off]}" "${R[$n.vmm_kicks]}" "${R[$n.vmm_irqs]}"
done
echo
echo "on/off: VIRTIO_RING_F_EVENT_IDX negotiated or not. VMM counters: the whole run (both modes,"
echo "all phases), from minivmm's exit line; '-' where the VMM prints none (QEMU)."
