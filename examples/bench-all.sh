#!/usr/bin/env bash
# bench-all.sh: the network sweeps of docs/benchmarks.md in one run (examples/netbench.sh, UDP
# and TCP, guest to host, host to guest and request/response, against QEMU), and the section of that file between
# its markers regenerated from what they printed: per sweep its command, the date, the machine
# (CPU model, cores, kernel, load average at the start) and the table, and a plot in docs/plots/.
#
# usage: examples/bench-all.sh [--rounds N] [--secs N] [--force] [--dry-run] [--doc FILE]
#
#   --rounds N   rounds per size (default 5: what docs/benchmarks.md publishes)
#   --secs N     seconds per UDP round (default 2)
#   --force      run on a loaded machine (1-minute load average over 0.5), which it otherwise
#                refuses to do; the output and the regenerated section say so
#   --dry-run    print the netbench commands it would run, one per line, and run nothing
#   --doc FILE   the Markdown file whose section to regenerate (default docs/benchmarks.md); its
#                plots go to plots/ beside it. The section lies between the lines
#                "<!-- bench-all: begin -->" and "<!-- bench-all: end -->"; the rest is kept.
#
# Sweeps, each with --rounds, --secs and --plot; --compare qemu: minivmm: where QEMU is installed
# ($QEMU, default qemu-system-x86_64), else --config minivmm: alone:
#   udp-g2h   --dir g2h --ceiling --probe-args net.txwait=halt --sizes "32 64 128 256 512 1024 65507"
#   udp-h2g   --dir h2g --ceiling --probe-args net.rxwait=halt --sizes "64 512 1472 65507"
#   udp-rr    --dir rr --ceiling --sizes "64 4000"
#   tcp-g2h-on, tcp-g2h-off, tcp-h2g-on, tcp-h2g-off   --proto tcp --dir g2h|h2g --offload on|off
#             [g2h: --probe-args net.txwait=halt] --sizes "64 1448 65536" (the write sizes:
#             netperf TCP_STREAM -m; the MiB per row by write size, netbench's default)
#   tcp-g2g   --proto tcp --dir g2g --sizes "64 1448 65536"
#   tcp-rr    --proto tcp --dir rr --ceiling --sizes "1 64"
#   tcp-crr   --proto tcp --dir crr --ceiling --sizes 64 (netperf TCP_CRR)
# Every sweep runs even when one fails, but the file and its plots are written only when all of
# them passed (exit 1 otherwise). Needs what netbench.sh needs (root, /dev/kvm, /dev/net/tun, a
# built tree) and gnuplot (apt-get install gnuplot-nox); all checked before the first sweep.
# For the tests: NETBENCH (the script to run, default examples/netbench.sh) and BENCH_LOADAVG
# (the file the load average is read from, default /proc/loadavg).
set -euo pipefail

ROUNDS=5
SECS=2
FORCE=0
DRY_RUN=0
DOC=""

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
bench_args --rounds=ROUNDS --secs=SECS --force+FORCE --dry-run+DRY_RUN --doc=DOC -- "$@"
[[ "$ROUNDS" =~ ^[1-9][0-9]?$ ]] || die "--rounds must be 1 to 99"
bench_positive SECS
# --doc is relative to where we were started; everything else to the repository
[[ -z "$DOC" || "$DOC" == /* ]] || DOC=$PWD/$DOC
bench_paths
DOC=${DOC:-$PWD/docs/benchmarks.md}
PLOTS=$(dirname "$DOC")/plots
NETBENCH=${NETBENCH:-examples/netbench.sh}
LOADAVG=${BENCH_LOADAVG:-/proc/loadavg}
GNUPLOT=${GNUPLOT:-gnuplot}
BEGIN_MARK="<!-- bench-all: begin -->"
END_MARK="<!-- bench-all: end -->"

# The sweeps: name, heading, netbench's arguments (before the common ones)
VMS=(--config minivmm:)
! command -v "$QEMU" >/dev/null || VMS=(--compare qemu: minivmm:)
NAMES=() HEADS=()
# sweep NAME HEADING ARG...: CMD_NAME, the command for NAME (cmd_of prints it)
sweep() {
	local name=$1 head=$2
	shift 2
	NAMES+=("$name") HEADS+=("$head")
	local -n cmd="CMD_${name//-/_}"
	# shellcheck disable=SC2034 # read through cmd_of
	cmd=("$NETBENCH" "$@" "${VMS[@]}" --rounds "$ROUNDS" --secs "$SECS" --plot "${PLOTS#"$PWD/"}/$name.svg")
}
sweep udp-g2h "UDP, guest to host" --dir g2h --ceiling --probe-args net.txwait=halt \
	--sizes "32 64 128 256 512 1024 65507"
sweep udp-h2g "UDP, host to guest" --dir h2g --ceiling --probe-args net.rxwait=halt \
	--sizes "64 512 1472 65507"
sweep udp-rr "UDP, request/response" --dir rr --ceiling --sizes "64 4000"
for d in g2h h2g; do
	for o in on off; do
		h="guest to host"
		[ $d = g2h ] || h="host to guest"
		w=()
		[ $d = h2g ] || w=(--probe-args net.txwait=halt)
		sweep "tcp-$d-$o" "TCP, $h, offloads $o" --proto tcp --dir $d --offload $o "${w[@]}" \
			--sizes "64 1448 65536"
	done
done
sweep tcp-g2g "TCP, guest to guest" --proto tcp --dir g2g --sizes "64 1448 65536"
sweep tcp-rr "TCP, request/response" --proto tcp --dir rr --ceiling --sizes "1 64"
sweep tcp-crr "TCP, connect/request/response" --proto tcp --dir crr --ceiling --sizes 64

if [ "$DRY_RUN" = 1 ]; then
	for n in "${NAMES[@]}"; do
		cmd_of "$n"
		echo
	done
	exit 0
fi

# Before the first sweep: what the end needs (gnuplot, the file and its markers) and a quiet machine.
command -v "$GNUPLOT" >/dev/null || die "needs gnuplot for the plots: apt-get install gnuplot-nox"
if [ "$NETBENCH" = examples/netbench.sh ]; then # (not the tests' stand-in)
	[ "$(id -u)" = 0 ] || die "needs root, as netbench.sh does (network namespaces, taps)"
	bench_require minivmm probe kvm tun
fi
[ -f "$DOC" ] && [ -w "$DOC" ] || die "$DOC is not a writable file"
# check_markers FILE: each marker on a line of its own, once, the begin before the end
check_markers() {
	awk -v b="$BEGIN_MARK" -v e="$END_MARK" '
		$0 == b { nb++; if (ne) bad = 1 } $0 == e { ne++ }
		END { exit !(nb == 1 && ne == 1 && !bad) }' "$1"
}
check_markers "$DOC" || die "$DOC: needs the lines '$BEGIN_MARK' and '$END_MARK', once each, in that order"
read -r L1 L5 L15 _ <"$LOADAVG" || die "cannot read the load average from $LOADAVG"
LOAD_NOTE=""
if awk -v l="$L1" 'BEGIN { exit !(l > 0.5) }'; then
	[ "$FORCE" = 1 ] || die "load average $L1 (1 minute) is over 0.5: figures from a loaded machine are not published; wait, or --force"
	LOAD_NOTE="run with --force on a loaded machine (load average $L1 over 0.5): not for comparison with quiet runs"
	echo "bench-all: $LOAD_NOTE" >&2
fi

# The machine line: CPU model, cores, kernel, load average at the start
cpu=$(sed -n '/^model name/{s/^model name[[:space:]]*: //p;q}' /proc/cpuinfo)
MACHINE="${cpu:-unknown CPU}, $(nproc) cores, kernel $(uname -r), load average $L1 $L5 $L15 at the start"
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || rev="$rev (with local changes)"

bench_tmp
FAILED=()
for i in "${!NAMES[@]}"; do
	n=${NAMES[$i]}
	v="CMD_${n//-/_}[@]"
	args=("${!v}")
	args[${#args[@]} - 1]=$TMP/$n.svg # the plot goes to the file only when all passed
	DATE[i]=$(date -u '+%Y-%m-%d %H:%M UTC')
	echo "bench-all: $(cmd_of "$n")" >&2
	rc=0
	"${args[@]}" >"$TMP/$n.txt" || rc=$?
	cat "$TMP/$n.txt"
	if [ $rc != 0 ] || [ ! -s "$TMP/$n.svg" ]; then
		echo "bench-all: $n failed (status $rc)" >&2
		FAILED+=("$n")
	fi
done
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "bench-all: failed: ${FAILED[*]}; $DOC and $PLOTS left as they were" >&2
	exit 1
fi

# The section, then the file with it between the markers (through a temporary file)
{
	echo
	echo "## Network sweeps: examples/bench-all.sh"
	echo
	echo "Generated by \`examples/bench-all.sh --rounds $ROUNDS --secs $SECS$([ "$FORCE" = 0 ] || echo " --force")\` at minivmm $rev;"
	echo "everything between the markers is rewritten by the next run."
	[ -z "$LOAD_NOTE" ] || printf '\n**%s.**\n' "${LOAD_NOTE^}"
	for i in "${!NAMES[@]}"; do
		n=${NAMES[$i]}
		printf '\n### %s\n\n%s; %s:\n\n' "${HEADS[$i]}" "${DATE[$i]}" "$MACHINE"
		echo "    $(cmd_of "$n")"
		echo
		sed 's/^/    /; s/^ *$//' "$TMP/$n.txt"
		printf '\n![%s](plots/%s.svg)\n' "${HEADS[$i]}" "$n"
	done
	echo
} >"$TMP/section.md"
awk -v b="$BEGIN_MARK" -v e="$END_MARK" -v f="$TMP/section.md" '
	$0 == e { skip = 0 }
	!skip { print }
	$0 == b { while ((getline l < f) > 0) print l; skip = 1 }' "$DOC" >"$TMP/doc.md"
check_markers "$TMP/doc.md" || die "internal: the regenerated $DOC lost its markers"
mkdir -p "$PLOTS"
for n in "${NAMES[@]}"; do cp "$TMP/$n.svg" "$PLOTS/$n.svg"; done
cat "$TMP/doc.md" >"$DOC"
echo "bench-all: $DOC regenerated, plots in $PLOTS" >&2
