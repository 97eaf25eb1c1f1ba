#!/usr/bin/env bash
# shellcheck disable=SC2034 # CMD_* are read through ${!name}
# bench-console.sh: the guest's output rate through minivmm's virtio console against the 8250
# (COM1), the same guest and the same sink: the probe's test=console (firmware/tests/
# test_console.c) writes --size bytes (default 16M) of its pattern once to a named port
# (`--vport bench:file=`, --chunk buffers, default 16K, --depth in flight, default 8), once to
# COM1 (a byte per exit; --com1-size, default 1M, as it is slow) into a file. The rates are the
# guest's own (bytes over the TSC time of the loop, making the pattern included); each run's
# output file is checked to be the size written. Medians over --rounds (default 5), the ratio,
# and the exact commands. minivmm only (a QEMU column is left for later). It needs /dev/kvm
# (without it there are no figures: it says so and exits 2).
#
# usage: examples/bench-console.sh [--rounds N] [--size SIZE] [--com1-size SIZE] [--chunk SIZE]
#                                  [--depth N] [--transport mmio|pci]
set -euo pipefail

ROUNDS=5
SIZE=16M
COM1_SIZE=1M
CHUNK=16K
DEPTH=8
TRANSPORT=mmio

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
bench_args --rounds=ROUNDS --size=SIZE --com1-size=COM1_SIZE --chunk=CHUNK --depth=DEPTH \
	--transport=TRANSPORT -- "$@"
bench_positive ROUNDS DEPTH
[[ "$SIZE" =~ ^[1-9][0-9]*[KMG]?$ ]] || die "--size must be like 16M"
[[ "$COM1_SIZE" =~ ^[1-9][0-9]*[KMG]?$ ]] || die "--com1-size must be like 1M"
[[ "$CHUNK" =~ ^[1-9][0-9]*K?$ ]] || die "--chunk must be like 16K (at most 64K)"
[ "$DEPTH" -le 16 ] || die "--depth must be 1 to 16"
case "$TRANSPORT" in mmio | pci) ;; *) die "--transport mmio or pci" ;; esac

bench_paths
if [ ! -e /dev/kvm ]; then
	echo "$BENCH_NAME: this host has no /dev/kvm: no figures without KVM (the guest would run emulated)" >&2
	exit 2
fi
bench_require minivmm probe kvm
bench_tmp
BYTES=$(numfmt --from=iec "$SIZE")
COM1_BYTES=$(numfmt --from=iec "$COM1_SIZE")

CMD_hvc=("$MINIVMM" --kernel "$PROBE" --memory 256M --quiet
	--console "virtio,transport=$TRANSPORT" --vport "bench:file=$TMP/hvc.data,max-size=0"
	--cmdline "test=console console.port=bench console.bytes=$BYTES console.chunk=$CHUNK console.depth=$DEPTH")
CMD_com1=("$MINIVMM" --kernel "$PROBE" --memory 256M --quiet
	--console "file=$TMP/com1.data,max-size=0"
	--cmdline "test=console console.port=com1 console.bytes=$COM1_BYTES")

# run NAME FILE BYTES: one guest run; appends its rate in MB/s (10^6 bytes/s) to
# $TMP/NAME.results
run() {
	local name=$1 file=$2 bytes=$3 cmd out line
	cmd="CMD_$1[@]"
	rm -f "$file"
	out=$(timeout 600 "${!cmd}" </dev/null 2>&1) || true
	if [ "$name" = com1 ]; then
		line=$(grep -a -m1 '^probe: console com1 ' "$file" || true)
	else
		line=$(grep -a -m1 '^probe: console bytes=' <<<"$out" || true)
		[ "$(stat -c %s "$file" 2>/dev/null || echo 0)" = "$bytes" ] ||
			die "$name: the port's file is not $bytes bytes"
	fi
	if [ -z "$line" ]; then
		echo "$BENCH_NAME: $name run failed:" >&2
		tail -n 15 <<<"$out" >&2
		exit 1
	fi
	awk -v l="$line" 'BEGIN {
		match(l, / us=[0-9]+/); us = substr(l, RSTART + 4, RLENGTH - 4)
		match(l, / bytes=[0-9]+/); b = substr(l, RSTART + 7, RLENGTH - 7)
		printf "%.3f\n", (us > 0 ? b / us : 0) }' >>"$TMP/$name.results"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then
		run hvc "$TMP/hvc.data" "$BYTES"
		run com1 "$TMP/com1.data" "$COM1_BYTES"
	else
		run com1 "$TMP/com1.data" "$COM1_BYTES"
		run hvc "$TMP/hvc.data" "$BYTES"
	fi
	echo "round $r/$ROUNDS done" >&2
done

hvc=$(median <"$TMP/hvc.results")
com1=$(median <"$TMP/com1.results")
echo "guest output, minivmm, transport=$TRANSPORT; medians of $ROUNDS alternating rounds (MB/s, 10^6 bytes/s)"
printf '%-26s %10s\n' "virtio console ($SIZE)" "$hvc" "8250 COM1 ($COM1_SIZE)" "$com1"
awk -v a="$hvc" -v b="$com1" 'BEGIN {if (b > 0) printf "ratio virtio / 8250: %.1f\n", a / b}'
echo
echo "commands:"
echo "  virtio: $(cmd_of hvc)"
echo "  8250:   $(cmd_of com1)"
