#!/usr/bin/env bash
# bench-blk.sh: virtio-blk throughput of minivmm and QEMU side by side, on the same raw image,
# both with cache=none (O_DIRECT) and io_uring, driven by the same guest: the probe's test=blk
# (firmware/tests/test_blk.c) reports 4 KiB random-read IOPS (32 requests in flight, for --secs) and
# 1 MiB sequential read and write MB/s (8 in flight) over --bytes of the disk; the writes are
# timed up to the end of the FLUSH that follows them, for both VMMs.
# A benchmark, not a test: each round runs both (minivmm first in odd rounds, QEMU first in even
# ones); it prints the medians over N rounds, the ratios minivmm / QEMU, and the exact commands.
#
# usage: examples/bench-blk.sh [--runs N] [--bytes SIZE] [--secs N] [--depth N] [--transport mmio|pci]
#                              [--baseline MINIVMM] [--vhost-user]
# (--depth: 1 MiB requests in flight in the sequential passes, 1 to 8, default 8; --baseline: an
# older minivmm build, e.g. cp build/minivmm /tmp/minivmm-old before a change, as a third
# column in the same rounds, with the ratio minivmm / baseline: a change's effect on blk;
# --vhost-user: instead of QEMU, minivmm with --disk vhost-user= on Debian's qemu-storage-daemon
# serving the same image (O_DIRECT, io_uring), started once for every round: minivmm's own
# virtio-blk against its vhost-user front end and that back end)
#
# QEMU runs the microvm machine for mmio (virtio-blk-device, modern virtio-mmio) and the pc
# machine for pci (virtio-blk-pci, modern only).
set -euo pipefail

RUNS=5
BYTES=64M
SECS=2
TRANSPORT=mmio
DEPTH=8
BASELINE=""
VHOST_USER=0

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
bench_args --runs=RUNS --bytes=BYTES --secs=SECS --depth=DEPTH --transport=TRANSPORT \
	--baseline=BASELINE --vhost-user+VHOST_USER -- "$@"
bench_positive RUNS SECS
[[ "$BYTES" =~ ^[1-9][0-9]*[KMG]?$ ]] || die "--bytes must be like 64M"
[[ "$DEPTH" =~ ^[1-8]$ ]] || die "--depth must be 1 to 8"
case "$TRANSPORT" in mmio | pci) ;; *) die "--transport mmio or pci" ;; esac

bench_paths
bench_require minivmm probe qemu kvm
QSD=$(command -v qemu-storage-daemon || true)
[ "$VHOST_USER" = 0 ] || [ -n "$QSD" ] ||
	die "--vhost-user: qemu-storage-daemon not found: apt-get install qemu-system-common"
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || die "--baseline $BASELINE: not an executable"

# The image lives beside the build (a real file system: O_DIRECT needs one, tmpfs may not do).
TMP=$(mktemp -d "$PWD/build/bench-blk.XXXXXX")
QSD_PID=""
trap '[ -z "$QSD_PID" ] || { kill "$QSD_PID"; wait "$QSD_PID"; } 2>/dev/null; rm -rf "$TMP"' EXIT
bench_on_interrupt
IMG=$TMP/disk.img
# Written out in full first: no run pays for allocating blocks a later one overwrites.
IMG_MIB=$(numfmt --from=iec "$BYTES" | awk '{ m = int(($1 + 1048575) / 1048576); print (m < 256 ? 256 : m) }')
dd if=/dev/zero of="$IMG" bs=1M count="$IMG_MIB" status=none

GUEST="test=blk blk.bytes=$BYTES blk.secs=$SECS blk.depth=$DEPTH"
CMD_minivmm=("$MINIVMM" --kernel "$PROBE" --memory 256M --quiet --console stdio
	--disk "path=$IMG,cache=none,transport=$TRANSPORT" --cmdline "$GUEST")
if [ "$TRANSPORT" = mmio ]; then
	QEMU_DEV=(-M microvm,acpi=off -global virtio-mmio.force-legacy=false -device virtio-blk-device,drive=d0)
else
	QEMU_DEV=(-M pc -device virtio-blk-pci,drive=d0,disable-legacy=on)
fi
CMD_qemu=("$QEMU" -accel kvm "${QEMU_DEV[@]}" -m 256M -nographic -no-reboot
	-kernel "$PROBE" -device isa-debug-exit,iobase=0xf4
	-drive "file=$IMG,if=none,id=d0,format=raw,cache=none,aio=io_uring" -append "$GUEST")
CMD_baseline=("$BASELINE" "${CMD_minivmm[@]:1}")
# The other column: QEMU, or minivmm's vhost-user front end on qemu-storage-daemon.
OTHER=qemu
if [ "$VHOST_USER" = 1 ]; then
	OTHER=vhost-user
	SOCK=$TMP/vu.sock
	CMD_qsd=("$QSD" --blockdev "driver=file,node-name=file0,filename=$IMG,cache.direct=on,aio=io_uring"
		--export "type=vhost-user-blk,id=exp0,node-name=file0,addr.type=unix,addr.path=$SOCK,writable=on")
	"${CMD_qsd[@]}" 2>"$TMP/qsd.err" &
	QSD_PID=$!
	CMD_other=("$MINIVMM" --kernel "$PROBE" --memory 256M --quiet --console stdio
		--disk "vhost-user=$SOCK,transport=$TRANSPORT" --cmdline "$GUEST")
else
	CMD_other=("${CMD_qemu[@]}")
fi
NAMES=(minivmm other)
[ -z "$BASELINE" ] || NAMES+=(baseline)
METRICS=(randread_4k_iops seq_read_mbps seq_write_mbps)

# run NAME: one guest run; appends "iops rmbps wmbps" to $TMP/NAME.results
run() {
	local name=$1 cmd out
	cmd="CMD_$1[@]"
	out=$(timeout 300 "${!cmd}" </dev/null 2>&1) || true
	if ! grep -q '^probe: PASS' <<<"$out"; then
		echo "bench-blk: $name run failed:" >&2
		tail -n 15 <<<"$out" >&2
		exit 1
	fi
	local line
	line=$(grep -m1 'randread_4k_iops=' <<<"$out")
	local v=()
	for m in "${METRICS[@]}"; do v+=("$(sed -n "s/.*$m=\([0-9]*\).*/\1/p" <<<"$line")"); done
	echo "${v[*]}" >>"$TMP/$name.results"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

# The order rotates from round to round: none always follows another.
n=${#NAMES[@]}
for ((r = 1; r <= RUNS; r++)); do
	for ((k = 0; k < n; k++)); do run "${NAMES[(r - 1 + k) % n]}"; done
	echo "round $r/$RUNS done" >&2
done

# ratio A B: A / B to two places, "-" when B is 0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }

echo "virtio-blk, transport=$TRANSPORT, cache=none, guest: $GUEST; medians of $RUNS rotating rounds"
if [ -z "$BASELINE" ]; then
	printf '%-18s %12s %12s %10s\n' metric minivmm "$OTHER" ratio
else
	printf '%-18s %12s %12s %10s %12s %14s\n' metric minivmm "$OTHER" ratio baseline minibase
fi
for i in 0 1 2; do
	mv=$(awk -v c=$((i + 1)) '{print $c}' "$TMP/minivmm.results" | median)
	qv=$(awk -v c=$((i + 1)) '{print $c}' "$TMP/other.results" | median)
	if [ -z "$BASELINE" ]; then
		printf '%-18s %12s %12s %10s\n' "${METRICS[$i]}" "$mv" "$qv" "$(ratio "$mv" "$qv")"
	else
		bv=$(awk -v c=$((i + 1)) '{print $c}' "$TMP/baseline.results" | median)
		printf '%-18s %12s %12s %10s %12s %14s\n' "${METRICS[$i]}" "$mv" "$qv" "$(ratio "$mv" "$qv")" \
			"$bv" "$(ratio "$mv" "$bv")"
	fi
done
echo
echo "commands:"
echo "  minivmm: ${CMD_minivmm[*]}"
if [ "$VHOST_USER" = 1 ]; then
	echo "  vhost-user: ${CMD_other[*]}"
	echo "    back end: ${CMD_qsd[*]}"
else
	echo "  qemu:    ${CMD_qemu[*]}"
fi
[ -z "$BASELINE" ] || echo "  baseline: ${CMD_baseline[*]}"
