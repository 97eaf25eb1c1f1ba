#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2054 # CMD_*/EXPECT_* are read through ${!name}; -M takes commas
# bench-boot.sh: boot the probe guest (build/firmware/probe.elf, PVH entry) with minivmm and with
# QEMU's microvm machine, side by side in one run, and compare
#   1. wall time from process start to the first byte on the serial console, and
#   2. VMM memory at that moment: total RSS, and RSS beyond the guest RAM the guest touched
#      (total RSS minus the RSS of the guest-RAM mapping: the anonymous mapping whose size
#      equals --memory).
# A benchmark, not a test: it prints medians over N rounds; each round runs minivmm (default:
# guest RAM faulted in as the guest touches it), minivmm --populate (pre-faulted in the
# background) and QEMU, one after another.
#
# usage: examples/bench-boot.sh [--startup [--variant "MINIVMM ARGS"] [--baseline MINIVMM]] [--runs N] [--memory SIZE]
#                               [--timeout SEC] [--json]
#
# --startup: start-up at the floor instead (examples/lib/bench-startup.sh): the
# four-instruction guest examples/tiny-guest.S under examples/startup-floor (KVM_CREATE_VM,
# one memory slot, one vCPU, KVM_RUN: the least any VMM does), minivmm --timing and QEMU
# (when installed), N rounds in rotating order; medians of the first serial byte, minivmm/floor
# and QEMU/floor, and minivmm's median time and share per start-up step. Target (issue 19):
# minivmm <= 1.5x the floor. --variant "ARGS" adds a column: minivmm with ARGS added (e.g.
# --variant "--seccomp off": what the system-call filters cost end to end). --baseline PATH adds
# another minivmm binary (an older build: cp build/minivmm /tmp/minivmm-old before the change) in
# the same rounds, with its own steps: a change's effect on start-up, side by side in one run.
#
# The measuring is done by examples/first-byte.c (built here into build/examples/first-byte):
# it fork/execs the VMM with stdout on a pipe, times the first byte with CLOCK_MONOTONIC and
# reads /proc/PID/smaps right then. Targets (issue): first byte >= 5x sooner than QEMU;
# minivmm's RSS beyond guest RAM < 4 MiB.
set -euo pipefail

RUNS=10
MEMORY=256M
TIMEOUT=30
JSON=0
STARTUP=0
VARIANT=""
BASELINE=""
CMDLINE=""

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
bench_args --runs=RUNS --memory=MEMORY --timeout=TIMEOUT --json+JSON --startup+STARTUP \
	--variant=VARIANT --baseline=BASELINE -- "$@"
bench_positive RUNS
case "$MEMORY" in
[1-9]*[0-9]M) MEM_BYTES=$(( ${MEMORY%M} << 20 )) ;;
[1-9]*[0-9]G | [1-9]G) MEM_BYTES=$(( ${MEMORY%G} << 30 )) ;;
*) die "--memory must be like 256M or 1G" ;;
esac

[ -z "$VARIANT" ] || [ "$STARTUP" = 1 ] || die "--variant goes with --startup"
[ -z "$BASELINE" ] || [ "$STARTUP" = 1 ] || die "--baseline goes with --startup"
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || die "--baseline $BASELINE: not an executable"
bench_paths
if [ "$STARTUP" = 1 ]; then
	# shellcheck source=examples/lib/bench-startup.sh
	source examples/lib/bench-startup.sh
	startup_main
	exit 0
fi
HELPER=build/examples/first-byte
bench_require minivmm probe qemu cc kvm

mkdir -p build/examples
cc -O2 -Wall -Wextra -Werror -o "$HELPER" examples/first-byte.c

bench_tmp # BENCH_CHILD: the helper (stopping it stops the VMM it runs)

# The three configurations, in the order they run within each round (read through ${!name}).
NAMES=(minivmm minivmm-pop qemu)
CMD_minivmm=("$MINIVMM" --kernel "$PROBE" --memory "$MEMORY" --cmdline "$CMDLINE" --console stdio --quiet)
CMD_minivmm_pop=("${CMD_minivmm[@]}" --populate)
# -cpu host is refused by this machine's KVM (MSR 0x10a); the default CPU model only warns.
CMD_qemu=("$QEMU" -accel kvm -M microvm,x-option-roms=off,pit=off,pic=off,rtc=off,isa-serial=on
	-m "$MEMORY" -nodefaults -no-user-config -nographic -serial stdio
	-kernel "$PROBE" -append "$CMDLINE" -device isa-debug-exit,iobase=0xf4)
# Exit status that means the probe passed: QEMU's isa-debug-exit turns the probe's 0 into 1.
EXPECT_minivmm=0
EXPECT_minivmm_pop=0
EXPECT_qemu=1

run_one() { # name -> appends "us rss ram_rss maxrss" to $TMP/name.dat ("-": no memory sample)
	local name=$1 v="CMD_${1//-/_}[@]" e="EXPECT_${1//-/_}" line
	"$HELPER" --timeout "$TIMEOUT" --ram "$MEM_BYTES" --out "$TMP/out" --err "$TMP/err" \
		-- "${!v}" >"$TMP/line" &
	BENCH_CHILD=$!
	wait "$BENCH_CHILD" || true
	BENCH_CHILD=
	line=$(cat "$TMP/line")
	local us rss ram maxrss exit
	us=$(sed -n 's/.*first_byte_us=\(-\{0,1\}[0-9]*\).*/\1/p' <<<"$line")
	exit=$(sed -n 's/.*exit=\([0-9]*\).*/\1/p' <<<"$line")
	rss=$(sed -n 's/.*rss_kb=\(-\{0,1\}[0-9]*\) ram_rss.*/\1/p' <<<"$line")
	ram=$(sed -n 's/.*ram_rss_kb=\(-\{0,1\}[0-9]*\).*/\1/p' <<<"$line")
	maxrss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' <<<"$line")
	if [ -z "$us" ] || [ "$us" -lt 0 ] || [ "$exit" != "${!e}" ] ||
		! grep -q '^probe: PASS' "$TMP/out"; then
		echo "bench-boot: $name run failed: $line" >&2
		echo "--- guest output:" >&2; cat "$TMP/out" >&2
		echo "--- stderr:" >&2; cat "$TMP/err" >&2
		exit 1
	fi
	if [ "${rss:--1}" -lt 0 ] || [ "${ram:--1}" -lt 0 ]; then
		echo "bench-boot: $name: VMM already exiting when its first byte was read: no memory sample this run" >&2
		rss=- ram=-
	fi
	echo "$us $rss $ram $maxrss" >>"$TMP/$name.dat"
}

# median of column $2 of file $1, or of ($2 - column $3); rows with "-" there are left out
median() {
	awk -v c="$2" -v d="${3:-0}" '$c != "-" && (!d || $d != "-") { print (d ? $c - $d : $c) }' "$1" |
		sort -n | awk '{ v[NR] = $1 }
		END { if (!NR) print -1; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# how many rows of file $1 have a memory sample
samples() { awk '$2 != "-"' "$1" | wc -l; }

say() { [ "$JSON" = 1 ] || echo "$@"; }

DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
CPU=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
KERNEL=$(uname -r)
NPROC=$(nproc)
QEMU_VERSION=$("$QEMU" --version | sed -n 1p)
say "bench-boot: $DATE"
say "machine: $NPROC CPUs ($CPU), kernel $KERNEL, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
say "qemu: $QEMU_VERSION"
say "guest: $PROBE (PVH entry), memory $MEMORY, cmdline \"$CMDLINE\", $RUNS rounds"
say "commands (each run by $HELPER --ram $MEM_BYTES -- COMMAND):"
for n in "${NAMES[@]}"; do say "  $n: $(cmd_of "$n")"; done

for ((i = 1; i <= RUNS; i++)); do
	for n in "${NAMES[@]}"; do run_one "$n"; done
	[ ! -t 2 ] || printf '\rround %d/%d' "$i" "$RUNS" >&2
done
[ ! -t 2 ] || printf '\r%*s\r' 20 '' >&2

declare -A T RSS RAM OVH MAX NMEM
for n in "${NAMES[@]}"; do
	f="$TMP/$n.dat"
	NMEM[$n]=$(samples "$f")
	if [ "${NMEM[$n]}" = 0 ]; then
		echo "bench-boot: $n: no run gave a memory sample (machine too loaded?)" >&2
		exit 1
	fi
	T[$n]=$(median "$f" 1)
	RSS[$n]=$(median "$f" 2)
	RAM[$n]=$(median "$f" 3)
	OVH[$n]=$(median "$f" 2 3)
	MAX[$n]=$(median "$f" 4)
done
# median over rounds of (QEMU's first-byte time / that of configuration $1 in the same round):
# paired, so less sensitive to load that drifts during the run than the ratio of the medians
paired() {
	paste "$TMP/qemu.dat" "$TMP/$1.dat" | awk '{ print $1 / $5 }' | sort -g |
		awk '{ v[NR] = $1 } END { printf "%.1f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }'; }
ms() { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.2f", k / 1024 }'; }

if [ "$JSON" = 1 ]; then
	runs_json() {
		awk -v c="$2" -v d="${3:-0}" '{ printf "%s", (NR > 1 ? "," : "")
			if ($c == "-" || (d && $d == "-")) printf "null"; else printf "%d", (d ? $c - $d : $c) }' "$1"
	}
	printf '{\n  "date": "%s",\n  "machine": {"nproc": %d, "cpu": "%s", "kernel": "%s"},\n' \
		"$DATE" "$NPROC" "$CPU" "$KERNEL"
	printf '  "qemu_version": "%s",\n  "guest": "%s",\n  "memory": "%s",\n  "memory_bytes": %d,\n  "runs": %d,\n' \
		"$QEMU_VERSION" "$PROBE" "$MEMORY" "$MEM_BYTES" "$RUNS"
	printf '  "configs": {\n'
	for n in "${NAMES[@]}"; do
		f="$TMP/$n.dat"
		cmd=$(cmd_of "$n" | sed 's/\\/\\\\/g; s/"/\\"/g')
		printf '    "%s": {\n      "command": "%s",\n' "$n" "$cmd"
		printf '      "memory_samples": %d,\n' "${NMEM[$n]}"
		printf '      "median": {"first_byte_us": %s, "rss_kb": %s, "guest_ram_rss_kb": %s, "rss_beyond_guest_ram_kb": %s, "peak_rss_kb": %s},\n' \
			"${T[$n]}" "${RSS[$n]}" "${RAM[$n]}" "${OVH[$n]}" "${MAX[$n]}"
		printf '      "first_byte_us": [%s],\n      "rss_kb": [%s],\n      "guest_ram_rss_kb": [%s],\n      "rss_beyond_guest_ram_kb": [%s],\n      "peak_rss_kb": [%s]\n' \
			"$(runs_json "$f" 1)" "$(runs_json "$f" 2)" "$(runs_json "$f" 3)" "$(runs_json "$f" 2 3)" "$(runs_json "$f" 4)"
		printf '    }%s\n' "$([ "$n" = qemu ] || echo ,)"
	done
	printf '  },\n  "ratios": {"first_byte_qemu_over_minivmm": %s, "first_byte_qemu_over_minivmm_pop": %s, "first_byte_paired_qemu_over_minivmm": %s, "first_byte_paired_qemu_over_minivmm_pop": %s, "rss_beyond_guest_ram_qemu_over_minivmm_pop": %s},\n' \
		"$(ratio "${T[qemu]}" "${T[minivmm]}")" "$(ratio "${T[qemu]}" "${T[minivmm-pop]}")" \
		"$(paired minivmm)" "$(paired minivmm-pop)" "$(ratio "${OVH[qemu]}" "${OVH[minivmm-pop]}")"
	printf '  "targets": {"first_byte_5x_sooner": {"minivmm": %s, "minivmm_pop": %s}, "rss_beyond_guest_ram_under_4mib": {"minivmm": %s, "minivmm_pop": %s}}\n}\n' \
		"$(awk -v q="${T[qemu]}" -v m="${T[minivmm]}" 'BEGIN { print (q >= 5 * m ? "true" : "false") }')" \
		"$(awk -v q="${T[qemu]}" -v m="${T[minivmm-pop]}" 'BEGIN { print (q >= 5 * m ? "true" : "false") }')" \
		"$(awk -v o="${OVH[minivmm]}" 'BEGIN { print (o < 4096 ? "true" : "false") }')" \
		"$(awk -v o="${OVH[minivmm-pop]}" 'BEGIN { print (o < 4096 ? "true" : "false") }')"
	exit 0
fi

echo
echo "medians over $RUNS runs each       minivmm   minivmm --populate        qemu   qemu/minivmm  qemu/minivmm --populate"
row() { # label unit-fn key-array [noratio]
	local label=$1 fn=$2 a=$3 m n q r1=- r2=-
	local -n arr=$a
	m=$($fn "${arr[minivmm]}"); n=$($fn "${arr[minivmm-pop]}"); q=$($fn "${arr[qemu]}")
	if [ -z "${4:-}" ]; then
		r1="$(ratio "${arr[qemu]}" "${arr[minivmm]}")x"
		r2="$(ratio "${arr[qemu]}" "${arr[minivmm-pop]}")x"
	fi
	printf '%-33s %10s %23s %11s %14s %27s\n' "$label" "$m" "$n" "$q" "$r1" "$r2"
}
row "first serial byte (ms)" ms T
printf '%-33s %10s %23s %11s %14s %27s\n' "  same, median of per-round ratios" "" "" "" \
	"$(paired minivmm)x" "$(paired minivmm-pop)x"
row "total RSS at first byte (MiB)" mib RSS
row "guest-RAM mapping RSS (MiB)" mib RAM noratio
row "RSS beyond guest RAM (MiB)" mib OVH
row "peak RSS, whole run (MiB)" mib MAX
echo "(RSS rows: medians over the runs whose VMM was still running when its first byte was read:"
echo " minivmm ${NMEM[minivmm]}, --populate ${NMEM[minivmm-pop]}, qemu ${NMEM[qemu]} of $RUNS)"
echo
verdict() { if [ "$1" = 1 ]; then echo met; else echo "NOT met"; fi; }
t5=$(awk -v q="${T[qemu]}" -v m="${T[minivmm]}" 'BEGIN { print (q >= 5 * m) }')
t5n=$(awk -v q="${T[qemu]}" -v m="${T[minivmm-pop]}" 'BEGIN { print (q >= 5 * m) }')
echo "target: first serial byte >= 5x sooner than QEMU: minivmm $(ratio "${T[qemu]}" "${T[minivmm]}")x ($(verdict "$t5")), --populate $(ratio "${T[qemu]}" "${T[minivmm-pop]}")x ($(verdict "$t5n"))"
o4=$(awk -v o="${OVH[minivmm]}" 'BEGIN { print (o < 4096) }')
o4n=$(awk -v o="${OVH[minivmm-pop]}" 'BEGIN { print (o < 4096) }')
echo "target: minivmm RSS beyond guest RAM < 4 MiB: minivmm $(mib "${OVH[minivmm]}") MiB ($(verdict "$o4")), --populate $(mib "${OVH[minivmm-pop]}") MiB ($(verdict "$o4n"))"
