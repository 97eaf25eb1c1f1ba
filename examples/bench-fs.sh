#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2054 # CMD_* are read through ${!name}; -M takes commas
# bench-fs.sh: virtio-fs, minivmm's vhost-user front end against QEMU's, the same back end behind
# both (Debian's virtiofsd on the same directory, a fresh one per run: it serves one session) and
# the same guest: the probe's test=fs (firmware/tests/test_fs.c) reads a --size file (default
# 256M) whole in --chunk requests (default 128K), --depth in flight (default 4), then times
# --getattrs GETATTRs one at a time (default 10000). Read MB/s (10^6 bytes) and GETATTR ops/s.
# The timed read checks the file's size and every reply's length but sums nothing (no fs.crc32:
# the probe's byte-wise CRC-32 would be what is measured); test=fs's tests check the bytes.
# A benchmark, not a test: each round runs both (minivmm first in odd rounds, QEMU first in even
# ones); it prints the medians over N rounds, the ratios minivmm / QEMU, and the exact commands.
# It needs /dev/kvm (without it there are no figures: it says so and exits 2), QEMU, virtiofsd
# and root (virtiofsd's chroot sandbox).
#
# usage: examples/bench-fs.sh [--rounds N] [--size SIZE] [--chunk SIZE] [--depth N]
#                             [--getattrs N] [--transport mmio|pci] [--virtiofsd PATH]
#
# QEMU runs the microvm machine for mmio (vhost-user-fs-device, modern virtio-mmio) and the pc
# machine for pci (vhost-user-fs-pci), its RAM a shared memfd (memory-backend-memfd,share=on) as
# minivmm's is with --fs.
set -euo pipefail

ROUNDS=5
SIZE=256M
CHUNK=128K
DEPTH=4
GETATTRS=10000
TRANSPORT=mmio
VIRTIOFSD=""

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
bench_args --rounds=ROUNDS --size=SIZE --chunk=CHUNK --depth=DEPTH --getattrs=GETATTRS \
	--transport=TRANSPORT --virtiofsd=VIRTIOFSD -- "$@"
bench_positive ROUNDS DEPTH GETATTRS
[[ "$SIZE" =~ ^[1-9][0-9]*[KMG]?$ ]] || die "--size must be like 256M"
[[ "$CHUNK" =~ ^[1-9][0-9]*[KM]?$ ]] || die "--chunk must be like 128K (at most 1M)"
[ "$DEPTH" -le 8 ] || die "--depth must be 1 to 8"
case "$TRANSPORT" in mmio | pci) ;; *) die "--transport mmio or pci" ;; esac

bench_paths
if [ ! -e /dev/kvm ]; then
	echo "$BENCH_NAME: this host has no /dev/kvm: no figures without KVM (both VMMs would run emulated)" >&2
	exit 2
fi
bench_require minivmm probe qemu kvm
if [ -z "$VIRTIOFSD" ]; then
	for c in /usr/lib/qemu/virtiofsd /usr/libexec/virtiofsd /usr/lib/virtiofsd; do
		[ -x "$c" ] && { VIRTIOFSD=$c; break; }
	done
	[ -n "$VIRTIOFSD" ] || VIRTIOFSD=$(command -v virtiofsd) ||
		die "virtiofsd not found: apt-get install qemu-system-common (or --virtiofsd PATH)"
fi
[ -x "$VIRTIOFSD" ] || die "--virtiofsd $VIRTIOFSD: not an executable"
[ "$(id -u)" = 0 ] || die "virtiofsd's sandbox needs root"

# The shared directory lives beside the build (a 256 MiB file would fill a small tmpfs).
TMP=$(mktemp -d "$PWD/build/bench-fs.XXXXXX")
SOCK=$TMP/fs.sock
PIDFILE=/run/virtiofsd/$(tr / . <<<"$SOCK").pid
VFSD_PID=
cleanup() {
	[ -z "$VFSD_PID" ] || kill -9 "$VFSD_PID" 2>/dev/null || true
	rm -rf "$TMP"
	rm -f "$PIDFILE"
}
trap cleanup EXIT
bench_on_interrupt
mkdir "$TMP/share"
BYTES=$(numfmt --from=iec "$SIZE")
head -c "$BYTES" /dev/urandom >"$TMP/share/bench.bin"
cat "$TMP/share/bench.bin" >/dev/null # in the host's page cache before any round

GUEST="test=fs fs.tag=benchfs fs.file=bench.bin fs.size=$BYTES fs.chunk=$CHUNK fs.depth=$DEPTH fs.getattrs=$GETATTRS"
CMD_minivmm=("$MINIVMM" --kernel "$PROBE" --memory 256M --quiet --console stdio
	--fs "socket=$SOCK,tag=benchfs,transport=$TRANSPORT" --cmdline "$GUEST")
if [ "$TRANSPORT" = mmio ]; then
	QEMU_DEV=(-M microvm,acpi=off,memory-backend=mem -global virtio-mmio.force-legacy=false
		-device vhost-user-fs-device,chardev=fs0,tag=benchfs)
else
	QEMU_DEV=(-M pc,memory-backend=mem -device vhost-user-fs-pci,chardev=fs0,tag=benchfs)
fi
CMD_qemu=("$QEMU" -accel kvm "${QEMU_DEV[@]}" -m 256M
	-object memory-backend-memfd,id=mem,size=256M,share=on -chardev "socket,id=fs0,path=$SOCK"
	-nographic -no-reboot -kernel "$PROBE" -device isa-debug-exit,iobase=0xf4 -append "$GUEST")
CMD_virtiofsd=("$VIRTIOFSD" --socket-path="$SOCK" -o source="$TMP/share" -o cache=none
	-o sandbox=chroot)
NAMES=(minivmm qemu)

# run NAME: one guest run with a fresh virtiofsd; appends "read_mbps getattr_ops" to
# $TMP/NAME.results
run() {
	local name=$1 cmd out
	cmd="CMD_$1[@]"
	rm -f "$SOCK"
	"${CMD_virtiofsd[@]}" >"$TMP/virtiofsd.log" 2>&1 &
	VFSD_PID=$!
	# QEMU does not retry its connect (minivmm does): the socket first.
	for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
	[ -S "$SOCK" ] || { cat "$TMP/virtiofsd.log" >&2; die "virtiofsd did not listen on $SOCK"; }
	out=$(timeout 300 "${!cmd}" </dev/null 2>&1) || true
	# It ends with the session; a VMM that failed may leave it waiting.
	kill "$VFSD_PID" 2>/dev/null || true
	wait "$VFSD_PID" 2>/dev/null || true
	VFSD_PID=
	if ! grep -q '^probe: PASS' <<<"$out"; then
		echo "$BENCH_NAME: $name run failed:" >&2
		tail -n 15 <<<"$out" >&2
		exit 1
	fi
	local read getattr
	read=$(grep -m1 '^probe: fs read ' <<<"$out")
	getattr=$(grep -m1 '^probe: fs getattr ' <<<"$out")
	awk -v r="$read" -v g="$getattr" 'BEGIN {
		match(r, / us=[0-9]+/); us = substr(r, RSTART + 4, RLENGTH - 4)
		match(r, / bytes=[0-9]+/); b = substr(r, RSTART + 7, RLENGTH - 7)
		match(g, / ops_per_s=[0-9]+/); o = substr(g, RSTART + 11, RLENGTH - 11)
		printf "%.1f %d\n", (us > 0 ? b / us : 0), o }' >>"$TMP/$name.results"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

n=${#NAMES[@]}
for ((r = 1; r <= ROUNDS; r++)); do
	for ((k = 0; k < n; k++)); do run "${NAMES[(r - 1 + k) % n]}"; done
	echo "round $r/$ROUNDS done" >&2
done

# ratio A B: A / B to two places, "-" when B is 0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }

echo "virtio-fs, transport=$TRANSPORT, virtiofsd cache=none, guest: $GUEST; medians of $ROUNDS rotating rounds"
printf '%-16s %12s %12s %10s\n' metric minivmm qemu ratio
METRICS=(read_mbps getattr_ops_s)
for i in 0 1; do
	mv=$(awk -v c=$((i + 1)) '{print $c}' "$TMP/minivmm.results" | median)
	qv=$(awk -v c=$((i + 1)) '{print $c}' "$TMP/qemu.results" | median)
	printf '%-16s %12s %12s %10s\n' "${METRICS[$i]}" "$mv" "$qv" "$(ratio "$mv" "$qv")"
done
echo
echo "commands:"
echo "  virtiofsd: $(cmd_of virtiofsd)"
echo "  minivmm:   $(cmd_of minivmm)"
echo "  qemu:      $(cmd_of qemu)"
