#!/usr/bin/env bash
# bench-run.sh: what `minivmm run -- true` costs end to end (issue 38), and each step of it:
# --runs runs (default 11) of `minivmm run --kernel KERNEL -- true`, the median wall time and
# the median of each `--timing` step (args includes building the initramfs; devices includes
# starting virtiofsd), then the guest's part (the rest). Needs /dev/kvm and root; a stock kernel
# boots fast only with hardware virtualization (on PVM hosts it is emulated: the VMM's own steps
# are still its own). Without /dev/kvm it says so, and `make share-cost` and the initramfs step
# (below) are what can be measured.
#
# usage: examples/bench-run.sh --kernel BZIMAGE [--modules DIR] [--runs N]
set -euo pipefail

RUNS=11
KERNEL=
MODULES=

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
bench_args --kernel=KERNEL --modules=MODULES --runs=RUNS -- "$@"
bench_positive RUNS
bench_paths
[ -n "$KERNEL" ] || die "--kernel BZIMAGE is required"
[ -f "$KERNEL" ] || die "--kernel $KERNEL: no such file"
bench_require minivmm
bench_tmp
MODARGS=()
[ -n "$MODULES" ] && MODARGS=(--modules "$MODULES")

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }

# The initramfs step alone: minivmm run up to /dev/kvm against plain minivmm up to it, without
# a VM (what a host without /dev/kvm can measure).
initramfs_us() {
	local t0 t1 t2 i
	t0=$(date +%s%N)
	for ((i = 0; i < RUNS; i++)); do
		"$MINIVMM" run --kernel "$KERNEL" "${MODARGS[@]}" -- true >/dev/null 2>&1 || true
	done
	t1=$(date +%s%N)
	for ((i = 0; i < RUNS; i++)); do "$MINIVMM" --kernel "$KERNEL" >/dev/null 2>&1 || true; done
	t2=$(date +%s%N)
	echo $((((t1 - t0) - (t2 - t1)) / 1000 / RUNS))
}

if [ ! -w /dev/kvm ]; then
	echo "bench-run: no /dev/kvm here: only minivmm's own steps (docs/run.md)"
	echo "initramfs and configuration: $(initramfs_us) us per run (mean of $RUNS, minus a plain minivmm that stops at /dev/kvm)"
	echo "virtiofsd start, handshake and stop: make share-cost RUNS=$RUNS"
	exit 2
fi

for ((i = 0; i < RUNS; i++)); do
	t0=$(date +%s%N)
	"$MINIVMM" run --timing --kernel "$KERNEL" "${MODARGS[@]}" -- true 2>"$TMP/err.$i" ||
		die "minivmm run -- true failed: $(tail -3 "$TMP/err.$i")"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >>"$TMP/wall"
	sed -n 's/.*startup-us: //p' "$TMP/err.$i" | tr ' ' '\n' | grep '=' >>"$TMP/steps"
done
echo "bench-run: minivmm run --kernel $KERNEL -- true, $RUNS runs, medians"
printf '%-10s %10s\n' step us
for s in exec args kvm memory devices load tables vcpus other seccomp threads guest total; do
	printf '%-10s %10s\n' "$s" "$(sed -n "s/^$s=//p" "$TMP/steps" | median)"
done
printf '%-10s %10s\n' wall "$(median <"$TMP/wall")"
