#!/usr/bin/env bash
# examples/netbench.sh --plot, no VM needed (netns: and the tapwrite: ceiling): the SVG is
# well-formed, has one line per configuration named in its key, the ceiling's dashed and the
# others not, and the message sizes as the x axis' tics; for rr the p50 and p99 latency and the
# transactions/s. A missing gnuplot or an unusable file name is refused before anything runs.
source "$(dirname "$0")/lib.sh"
runs_no_vmm
source "$(dirname "$0")/netns.sh"
netns_require
command -v cc >/dev/null || skip "no C compiler"
command -v gnuplot >/dev/null || skip "gnuplot is not installed (apt-get install gnuplot-nox)"
command -v xmllint >/dev/null || skip "xmllint is not installed (apt-get install libxml2-utils)"

BENCH=$ROOT/examples/netbench.sh
export NETBENCH_NS=nbplot-$$
# netbench removes its namespaces itself, also on failure; this is for a netbench killed hard.
on_exit "_netns_destroy '$NETBENCH_NS-g0'; _netns_destroy '$NETBENCH_NS'"

# The plot's lines are gnuplot's groups "gnuplot_plot_N", each with its key entry's text.
LINES='//*[local-name()="g"][starts-with(@id,"gnuplot_plot_")]'
# keys SVG: the key's entries, one a line, in the order drawn
keys() { xmllint --xpath "$LINES//*[local-name()=\"text\"]/text()" "$1" | sed 's/^ *//'; }
# dashed SVG N: the number of dashed strokes in line N
dashed() { xmllint --xpath "count(($LINES)[$2]//*[@stroke-dasharray])" "$1"; }
# tics SVG: the texts outside the lines (tics, labels, titles), one a line
tics() {
	xmllint --xpath '//*[local-name()="text"][not(ancestor::*[starts-with(@id,"gnuplot_plot_")])]/text()' "$1" |
		sed 's/^ *//'
}
# check SVG KEY... : well-formed, exactly these keys in this order
check() {
	local svg=$1 want got
	shift
	[ -s "$svg" ] || fail "no plot in $svg"
	xmllint --noout "$svg" || fail "$svg is not well-formed XML"
	want=$(printf '%s\n' "$@") got=$(keys "$svg")
	[ "$got" = "$want" ] || fail "$svg: lines '$got', expected '$want'"
}

# Guest to host: netns: and the tapwrite: ceiling; --json's output stays JSON alone.
out=$(cd "$TEST_TMP" && timeout 120 "$BENCH" --config netns: --ceiling --dir g2h --sizes "64 1472" \
	--secs 1 --rounds 1 --json --plot g2h.svg 2>"$TEST_TMP/g2h.err") ||
	{ cat "$TEST_TMP/g2h.err"; fail "netbench g2h --plot failed: $out"; }
grep -q '^{"dir":"g2h".*"configs":\["netns:","tapwrite:"\].*}$' <<<"$out" || fail "g2h: --json output: $out"
grep -q "plot in $TEST_TMP/g2h.svg" "$TEST_TMP/g2h.err" || fail "g2h: the plot's path, relative to where netbench ran"
svg=$TEST_TMP/g2h.svg
check "$svg" netns: tapwrite:
[ "$(dashed "$svg" 1)" = 0 ] || fail "g2h: netns: is dashed"
[ "$(dashed "$svg" 2)" -gt 0 ] || fail "g2h: the tapwrite: ceiling is not dashed"
# The sizes as tics of the x axis (1472 is no power of 2: no automatic tic would show it)
for s in 64 1472; do tics "$svg" | grep -qx "$s" || fail "g2h: no tic $s on the x axis: $(tics "$svg" | paste -sd '|')"; done
tics "$svg" | grep -q 'Mbit/s' || fail "g2h: the y axis is not throughput in Mbit/s"

# Request/response: netns: is the ceiling (dashed): latency p50 and p99, then transactions/s.
out=$(cd "$TEST_TMP" && timeout 120 "$BENCH" --config netns: --ceiling --dir rr --sizes 64 \
	--secs 1 --rounds 1 --plot "$TEST_TMP/rr.svg" 2>&1) || fail "netbench rr --plot failed: $out"
svg=$TEST_TMP/rr.svg
check "$svg" "netns: p50" "netns: p99" "netns:"
for i in 1 2 3; do [ "$(dashed "$svg" $i)" -gt 0 ] || fail "rr: line $i of the netns: ceiling is not dashed"; done
tics "$svg" | grep -qx 64 || fail "rr: no tic 64 on the x axis"
tics "$svg" | grep -qx 'latency, us' || fail "rr: no latency axis"
tics "$svg" | grep -qx 'transactions/s' || fail "rr: no transactions/s axis"

# Refused at once, before any run (--timeout 2: a wrongly accepted run ends soon).
refused() {
	local want=$1 rc=0
	shift
	"$BENCH" --config netns: --dir g2h --sizes 64 --secs 1 --timeout 2 "$@" >"$TEST_TMP/refused.out" \
		2>"$TEST_TMP/refused.err" || rc=$?
	[ $rc = 2 ] && grep -q -- "$want" "$TEST_TMP/refused.err" ||
		fail "$*: status $rc, $(cat "$TEST_TMP/refused.err")"
	[ ! -s "$TEST_TMP/refused.out" ] || fail "$*: ran anyway: $(cat "$TEST_TMP/refused.out")"
}
GNUPLOT=/nonexistent/gnuplot refused '--plot needs gnuplot' --plot "$TEST_TMP/x.svg"
refused 'is not a writable directory' --plot "$TEST_TMP/nodir/x.svg"
refused 'must end in .svg' --plot "$TEST_TMP/x.png"
[ ! -e "$TEST_TMP/x.svg" ] || fail "a refused run wrote a plot"

ip netns list | grep -qw -- "$NETBENCH_NS" && fail "netbench left its namespace behind"
exit 0
