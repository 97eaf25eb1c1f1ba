#!/usr/bin/env bash
# bench-exec.sh: what starting the minivmm binary costs before it does anything: exec, the
# dynamic loader, the libraries it links and their constructors (the `exec` step of
# `minivmm --timing`), measured without /dev/kvm as `BINARY --version` run back to back.
# Each round times --execs runs of every binary, in rotating order; prints per binary the
# median over the rounds of the time per exec, and its ratio to the first binary's.
#
# usage: examples/bench-exec.sh [--rounds N] [--execs N] [--bin PATH]...
#   --bin PATH   a binary to time (repeat to compare; default build/minivmm)
set -euo pipefail

ROUNDS=7
EXECS=300
BINS=()

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
add_bin() {
	bench_value "$@"
	[ -x "$2" ] || die "--bin $2: not an executable"
	BINS+=("$(realpath "$2")")
	BENCH_SHIFT=2
}
bench_args --rounds=ROUNDS --execs=EXECS --bin@add_bin -- "$@"
bench_positive ROUNDS EXECS
bench_paths
[ ${#BINS[@]} -gt 0 ] || BINS=("$PWD/build/minivmm")
[ -x "${BINS[0]}" ] || die "${BINS[0]}: not built (make)"
bench_tmp

# one BIN: microseconds per exec over EXECS runs of BIN --version
one() {
	local t0 t1 i
	t0=$(date +%s%N)
	for ((i = 0; i < EXECS; i++)); do "$1" --version >/dev/null 2>&1 || die "$1 --version failed"; done
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000 / EXECS))
}
n=${#BINS[@]}
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < n; k++)); do
		b=$(((r + k) % n))
		one "${BINS[$b]}" >>"$TMP/$b.dat"
	done
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "bench-exec: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs ($(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)), load $(cut -d' ' -f1 /proc/loadavg); $ROUNDS rounds of $EXECS execs, order rotating"
first=$(median "$TMP/0.dat")
for ((b = 0; b < n; b++)); do
	m=$(median "$TMP/$b.dat")
	printf '%-40s %6s us per exec  %s  (%s shared libraries)\n' "${BINS[$b]}" "$m" \
		"$(awk -v a="$m" -v f="$first" 'BEGIN { printf "%.2fx", a / f }')" \
		"$(ldd "${BINS[$b]}" 2>/dev/null | grep -c '=>')"
done
