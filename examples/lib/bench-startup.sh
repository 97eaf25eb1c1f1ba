# shellcheck shell=bash
# shellcheck disable=SC2034,SC2054 # CMD_*/EXPECT_* are read through ${!name}; -M takes commas
# examples/bench-boot.sh --startup: start-up at the floor. Sourced by bench-boot.sh after its
# arguments are parsed (RUNS, MEMORY, TIMEOUT, JSON; in the repository, bench_paths done).
#
# Four configurations boot the four-instruction guest (examples/tiny-guest.S: one byte to
# COM1, then port 0xf4), each run by examples/first-byte, which times fork to the first byte on
# the console and hands the child that start (MINIVMM_T0_NS):
#   floor    examples/startup-floor: KVM_CREATE_VM, one slot (as much RAM as minivmm's guest),
#            one vCPU, KVM_RUN, nothing else
#   kvmfloor the floor with --linux-kvm: plus the irqchip, PIT, TSS and CPUID that minivmm asks
#            KVM for so that stock Linux boots (the host kernel's share, not the VMM's)
#   minivmm  minivmm --kernel tiny-guest.elf --timing (its start-up per step, on stderr)
#   qemu     QEMU microvm on the same ELF, when qemu-system-x86_64 is installed
#   variant  with --variant "ARGS": minivmm --timing ARGS (e.g. "--seccomp off": what the
#            filters cost end to end), its steps shown too
# RUNS rounds; the order within a round rotates. Medians, minivmm/floor, and minivmm's
# median time and share per start-up step. Target (issue 19): minivmm <= 1.5x the floor.

STARTUP_STEPS=(exec args kvm memory devices load tables vcpus other seccomp threads guest)
FLOOR_STEPS=(exec kvm memory vcpus guest)

startup_main() {
	local helper=build/examples/first-byte tiny=${TINY_GUEST:-build/examples/tiny-guest.elf}
	local floor=${FLOOR:-build/examples/startup-floor} names=(floor kvmfloor minivmm) i k n
	bench_require minivmm cc kvm
	# (FLOOR and TINY_GUEST in the environment: other builds of them, used as they are)
	if [ -z "${FLOOR:-}" ] || [ -z "${TINY_GUEST:-}" ]; then
		make -s --no-print-directory build/examples/startup-floor build/examples/tiny-guest.elf ||
			die "cannot build the floor program and the tiny guest (make examples)"
	fi
	mkdir -p build/examples
	cc -O2 -Wall -Wextra -Werror -o "$helper" examples/first-byte.c
	[ -z "$VARIANT" ] || names+=(variant)
	[ -z "$BASELINE" ] || names+=(baseline)
	if command -v "$QEMU" >/dev/null; then names+=(qemu); else
		echo "$BENCH_NAME: $QEMU not found: no QEMU column (apt-get install qemu-system-x86)" >&2
	fi
	bench_tmp

	# The floor maps the same guest RAM: a memory slot's cost grows with its size.
	CMD_floor=("$floor" --memory "$((MEM_BYTES >> 20))")
	# The floor plus what minivmm asks KVM for before stock Linux can boot (irqchip, PIT,
	# TSS, CPUID): the host kernel's share of a VMM's start-up, not the VMM's own.
	CMD_kvmfloor=("${CMD_floor[@]}" --linux-kvm)
	CMD_minivmm=("$MINIVMM" --kernel "$tiny" --memory "$MEMORY" --console stdio --quiet --timing)
	local extra
	read -r -a extra <<<"$VARIANT" # words, as typed
	CMD_variant=("${CMD_minivmm[@]}" "${extra[@]}")
	CMD_baseline=("$BASELINE" "${CMD_minivmm[@]:1}")
	CMD_qemu=("$QEMU" -accel kvm -M microvm,x-option-roms=off,pit=off,pic=off,rtc=off,isa-serial=on
		-m "$MEMORY" -nodefaults -no-user-config -nographic -serial stdio
		-kernel "$tiny" -append "" -device isa-debug-exit,iobase=0xf4)
	# The guest writes 0x21 to port 0xf4: minivmm and the floor exit with it, QEMU with
	# (0x21 << 1) | 1.
	EXPECT_floor=33 EXPECT_kvmfloor=33 EXPECT_minivmm=33 EXPECT_variant=33 EXPECT_baseline=33 EXPECT_qemu=67

	local date cpu
	date=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
	cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
	if [ "$JSON" != 1 ]; then
		echo "bench-boot --startup: $date"
		echo "machine: $(nproc) CPUs ($cpu), kernel $(uname -r)"
		echo "guest: $tiny (4 instructions, PVH), memory $MEMORY (the floor's slot too), $RUNS rounds, order rotating"
		echo "commands (each run by $helper -- COMMAND):"
		for k in "${names[@]}"; do echo "  $k: $(cmd_of "$k")"; done
	fi

	n=${#names[@]}
	for ((i = 0; i < RUNS; i++)); do
		for ((k = 0; k < n; k++)); do startup_run "${names[(i + k) % n]}"; done
		[ ! -t 2 ] || printf '\rround %d/%d' "$((i + 1))" "$RUNS" >&2
	done
	[ ! -t 2 ] || printf '\r%*s\r' 20 '' >&2
	if [ "$JSON" = 1 ]; then startup_json "$date" "$cpu" "${names[@]}"; else startup_table "${names[@]}"; fi
}

# startup_run NAME: one run; appends its first-byte microseconds to $TMP/NAME.us and, for the
# floor and minivmm, the "step=value" words of their startup-us line to $TMP/NAME.steps.
startup_run() {
	local name=$1 v="CMD_${1}[@]" e="EXPECT_$1" line us exit
	"$helper" --timeout "$TIMEOUT" --out "$TMP/out" --err "$TMP/err" -- "${!v}" >"$TMP/line" &
	BENCH_CHILD=$!
	wait "$BENCH_CHILD" || true
	BENCH_CHILD=
	line=$(cat "$TMP/line")
	us=$(sed -n 's/.*first_byte_us=\([0-9]*\).*/\1/p' <<<"$line")
	exit=$(sed -n 's/.*exit=\([0-9]*\).*/\1/p' <<<"$line")
	if [ -z "$us" ] || [ "$exit" != "${!e}" ] || [ "$(head -c1 "$TMP/out")" != "!" ]; then
		echo "$BENCH_NAME: $name run failed: $line (exit status expected ${!e})" >&2
		echo "--- console:" >&2; cat "$TMP/out" >&2
		echo "--- stderr:" >&2; cat "$TMP/err" >&2
		exit 1
	fi
	echo "$us" >>"$TMP/$name.us"
	[ "$name" != qemu ] || return 0
	line=$(grep -m1 'startup-us: ' "$TMP/err" || true)
	if [[ "$line" != *" from=exec first_byte=yes" ]]; then
		echo "$BENCH_NAME: $name: no complete startup-us line on stderr:" >&2
		cat "$TMP/err" >&2
		exit 1
	fi
	echo "${line#*startup-us: }" >>"$TMP/$name.steps"
}

# median of the numbers on stdin (one a line); -1 for none
startup_median() {
	sort -g | awk '{ v[NR] = $1 } END { if (!NR) print -1; else if (NR % 2) print v[(NR + 1) / 2];
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# step_values NAME STEP: that step's microseconds, one a run
step_values() { tr ' ' '\n' <"$TMP/$1.steps" | sed -n "s/^$2=//p"; }
# paired NAME: median over rounds of (NAME's first byte / the floor's, same round)
startup_paired() {
	paste "$TMP/$1.us" "$TMP/floor.us" | awk '{ print $1 / $2 }' | startup_median
}

startup_table() {
	local names=("$@") k m f
	declare -A T
	for k in "${names[@]}"; do T[$k]=$(startup_median <"$TMP/$k.us"); done
	f=${T[floor]}
	echo
	printf '%-36s' "medians over $RUNS runs each"
	for k in "${names[@]}"; do printf '%12s' "$k"; done
	for k in "${names[@]}"; do [ "$k" = floor ] || printf '%16s' "$k/floor"; done
	echo
	printf '%-36s' "first serial byte (ms)"
	for k in "${names[@]}"; do printf '%12.2f' "$(awk -v u="${T[$k]}" 'BEGIN { print u / 1000 }')"; done
	for k in "${names[@]}"; do
		[ "$k" = floor ] || printf '%15.2fx' "$(awk -v a="${T[$k]}" -v b="$f" 'BEGIN { print a / b }')"
	done
	echo
	printf '%-36s%*s' "  same, median of per-round ratios" $((12 * ${#names[@]})) ""
	for k in "${names[@]}"; do [ "$k" = floor ] || printf '%15.2fx' "$(startup_paired "$k")"; done
	echo
	m=$(awk -v a="${T[minivmm]}" -v b="$f" 'BEGIN { printf "%.2f", a / b }')
	echo "target: minivmm's first serial byte <= 1.5x the floor's: ${m}x ($(awk -v r="$m" \
		'BEGIN { print (r <= 1.5 ? "met" : "NOT met") }'))"
	echo "minivmm against kvmfloor (the floor with KVM's set-up for Linux): $(awk -v a="${T[minivmm]}" \
		-v b="${T[kvmfloor]}" 'BEGIN { printf "%.2f", a / b }')x"
	startup_steps_table minivmm "${STARTUP_STEPS[@]}"
	[ -z "$VARIANT" ] || startup_steps_table variant "${STARTUP_STEPS[@]}"
	[ -z "$BASELINE" ] || startup_steps_table baseline "${STARTUP_STEPS[@]}"
	startup_steps_table floor "${FLOOR_STEPS[@]}"
	startup_steps_table kvmfloor "${FLOOR_STEPS[@]}"
}

# startup_steps_table NAME STEP...: median microseconds per step and its share of their sum
startup_steps_table() {
	local name=$1 s sum total
	shift
	declare -A M
	for s in "$@" total; do M[$s]=$(step_values "$name" "$s" | startup_median); done
	sum=$(for s in "$@"; do echo "${M[$s]}"; done | awk '{ t += $1 } END { print t }')
	echo
	echo "$name start-up by step (its own clock, median per step over $RUNS runs; share of their sum):"
	for s in "$@"; do
		printf '  %-8s %10.1f us %6.1f%%\n' "$s" "${M[$s]}" \
			"$(awk -v v="${M[$s]}" -v t="$sum" 'BEGIN { print (t > 0 ? 100 * v / t : 0) }')"
	done
	printf '  %-8s %10.1f us (sum of the step medians %.1f us)\n' total "${M[total]}" "$sum"
}

startup_json() {
	local date=$1 cpu=$2 k s first=1
	shift 2
	local names=("$@")
	printf '{\n  "date": "%s",\n  "machine": {"nproc": %d, "cpu": "%s", "kernel": "%s"},\n' \
		"$date" "$(nproc)" "$cpu" "$(uname -r)"
	printf '  "guest": "%s",\n  "memory": "%s",\n  "runs": %d,\n  "configs": {\n' \
		"$tiny" "$MEMORY" "$RUNS"
	for k in "${names[@]}"; do
		[ "$first" = 1 ] || printf ',\n'
		first=0
		printf '    "%s": {"command": "%s", "first_byte_us": [%s], "median_first_byte_us": %s' \
			"$k" "$(cmd_of "$k" | sed 's/\\/\\\\/g; s/"/\\"/g')" "$(paste -sd, "$TMP/$k.us")" \
			"$(startup_median <"$TMP/$k.us")"
		if [ "$k" != floor ]; then
			printf ', "median_ratio_to_floor": %s' "$(startup_paired "$k")"
		fi
		if [ -f "$TMP/$k.steps" ]; then
			local steps=("${STARTUP_STEPS[@]}") sep=
			[ "$k" != floor ] && [ "$k" != kvmfloor ] || steps=("${FLOOR_STEPS[@]}")
			printf ', "median_step_us": {'
			for s in "${steps[@]}" total; do
				printf '%s"%s": %s' "$sep" "$s" "$(step_values "$k" "$s" | startup_median)"
				sep=", "
			done
			printf '}'
		fi
		printf '}'
	done
	printf '\n  }\n}\n'
}
