# shellcheck shell=bash
# Helpers shared by the examples/ benchmarks (bench-blk.sh, bench-boot.sh, bench-virtio.sh,
# netbench.sh); sourced, not run, before the script changes directory. Their messages start with
# the script's name: BENCH_NAME, e.g. "bench-blk".

BENCH_NAME=$(basename "$0" .sh)

# die MESSAGE: "NAME: MESSAGE" on stderr, exit 2 (a bad argument, something missing).
die() {
	echo "$BENCH_NAME: $*" >&2
	exit 2
}

# bench_usage [STATUS]: the script's header comment (after the shebang and any shellcheck
# directive, up to `set -euo`) as its usage; exit STATUS (2: a usage error; --help exits 0).
bench_usage() {
	sed -n '2,/^set -euo/p' "$0" | grep -v '^# shellcheck' | sed '$d; s/^# \{0,1\}//'
	exit "${1:-2}"
}

# bench_value FLAG [VALUE]: fail unless FLAG was given a VALUE that is not empty (exit 1).
bench_value() {
	[ -n "${2:-}" ] || { echo "$BENCH_NAME: $1 needs a value" >&2; exit 1; }
}

# bench_args SPEC... -- ARG...: parse the command line ARG... by a table of flags. A SPEC is
#   --flag=VAR    the flag takes a value, not empty: VAR=value
#   --flag=VAR?   the same, but the value may be empty
#   --flag+VAR    a switch: VAR=1
#   --flag@FN     FN ARG... handles it ($1 is the flag) and sets BENCH_SHIFT to the words it used
# -h and --help print the usage; any other argument is an error (the usage, exit 2); a flag
# without its value too (exit 1).
bench_args() {
	local specs=() s spec flag rest
	while [ "$1" != -- ]; do
		specs+=("$1")
		shift
	done
	shift
	while [ $# -gt 0 ]; do
		case "$1" in -h | --help) bench_usage 0 ;; esac
		spec=
		for s in "${specs[@]}"; do
			flag=${s%%[=+@]*}
			if [ "$flag" = "$1" ]; then
				spec=$s
				break
			fi
		done
		if [ -z "$spec" ]; then
			echo "$BENCH_NAME: unknown argument: $1" >&2
			bench_usage >&2
		fi
		rest=${spec#"$flag"}
		case "$rest" in
		=*\?)
			[ $# -ge 2 ] || { echo "$BENCH_NAME: $1 needs a value" >&2; exit 1; }
			rest=${rest#=}
			printf -v "${rest%\?}" '%s' "$2"
			shift 2
			;;
		=*)
			bench_value "$@"
			printf -v "${rest#=}" '%s' "$2"
			shift 2
			;;
		+*)
			printf -v "${rest#+}" 1
			shift
			;;
		@*)
			BENCH_SHIFT=1
			"${rest#@}" "$@"
			shift "$BENCH_SHIFT"
			;;
		esac
	done
}

# bench_positive VAR...: each VAR (the value of the flag --var) must be a positive integer.
bench_positive() {
	local v
	for v in "$@"; do
		[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v,,} must be a positive integer"
	done
}

# bench_paths: into the repository, with MINIVMM, PROBE and QEMU the programs the benchmark runs
# (from the environment, else build/minivmm, build/firmware/probe.elf, qemu-system-x86_64).
bench_paths() {
	cd "$(dirname "$0")/.." || exit
	MINIVMM=${MINIVMM:-build/minivmm}
	PROBE=${PROBE:-build/firmware/probe.elf}
	QEMU=${QEMU:-qemu-system-x86_64}
}

# bench_require WHAT...: what the benchmark needs (minivmm: $MINIVMM, probe: $PROBE, qemu: $QEMU,
# cc: a C compiler, kvm: /dev/kvm, tun: /dev/net/tun), checked in the order given; says how to
# get each one that is missing, then exits 2 if any is.
bench_require() {
	local w missing=0
	for w in "$@"; do
		case "$w" in
		minivmm) [ -x "$MINIVMM" ] || { echo "$BENCH_NAME: $MINIVMM not found: run 'make'" >&2; missing=1; } ;;
		probe) [ -f "$PROBE" ] || { echo "$BENCH_NAME: $PROBE not found: run 'make'" >&2; missing=1; } ;;
		qemu)
			command -v "$QEMU" >/dev/null ||
				{ echo "$BENCH_NAME: $QEMU not found: apt-get install qemu-system-x86" >&2; missing=1; }
			;;
		cc) command -v cc >/dev/null || { echo "$BENCH_NAME: no C compiler: apt-get install gcc" >&2; missing=1; } ;;
		kvm) [ -w /dev/kvm ] || { echo "$BENCH_NAME: /dev/kvm is missing or not writable" >&2; missing=1; } ;;
		tun) [ -e /dev/net/tun ] || { echo "$BENCH_NAME: /dev/net/tun is missing" >&2; missing=1; } ;;
		*) die "bench_require: unknown requirement: $w" ;;
		esac
	done
	[ "$missing" = 0 ] || exit 2
}

# bench_on_interrupt: on Ctrl-C, SIGTERM or SIGHUP say so and exit 130 (the EXIT trap cleans up).
bench_on_interrupt() {
	trap 'echo "$BENCH_NAME: interrupted" >&2; exit 130' INT TERM HUP
}

# bench_tmp: TMP, a fresh directory /tmp/NAME.XXXXXX, removed at exit; before that the run in
# the background whose pid is in BENCH_CHILD (if any) is stopped and waited for.
bench_tmp() {
	TMP=$(mktemp -d "/tmp/$BENCH_NAME.XXXXXX")
	BENCH_CHILD=
	trap bench_tmp_cleanup EXIT
	bench_on_interrupt
}
bench_tmp_cleanup() {
	if [ -n "$BENCH_CHILD" ]; then
		kill -TERM "$BENCH_CHILD" 2>/dev/null || true
		wait "$BENCH_CHILD" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}

# cmd_of NAME: the command line of configuration NAME (the array CMD_<NAME with - as _>),
# quoted for a shell where needed, for printing the exact commands a benchmark ran.
cmd_of() {
	local v="CMD_${1//-/_}[@]" a out=
	for a in "${!v}"; do
		if [[ -z "$a" || "$a" =~ [^A-Za-z0-9_./=,:+-] ]]; then
			a="'${a//\'/\'\\\'\'}'"
		fi
		out+="${out:+ }$a"
	done
	printf '%s' "$out"
}
