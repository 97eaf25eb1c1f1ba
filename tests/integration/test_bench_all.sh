#!/usr/bin/env bash
# examples/bench-all.sh without running a benchmark: --dry-run lists the sweeps of
# docs/benchmarks.md (against QEMU where it is installed); a loaded machine is refused unless
# --force, which the output and the file then say; on a copy of docs/benchmarks.md, with a
# stand-in for netbench.sh, only the section between the markers changes, each sweep's table,
# command, machine line and plot land there, and nothing is written when a sweep failed or the
# markers are missing.
source "$(dirname "$0")/lib.sh"
runs_no_vmm

ALL=$ROOT/examples/bench-all.sh
DOCS=$TEST_TMP/docs
DOC=$DOCS/benchmarks.md
mkdir -p "$DOCS"
cp "$ROOT/docs/benchmarks.md" "$DOC"
cp "$DOC" "$TEST_TMP/orig.md"

# The stand-in: logs its arguments, prints a table naming its plot, writes an SVG for --plot; fails
# when its arguments contain FAKE_FAIL.
FAKE=$TEST_TMP/fake-netbench.sh
cat >"$FAKE" <<'EOF'
#!/usr/bin/env bash
echo "$*" >>"$FAKE_LOG"
args="$*" plot=
while [ $# -gt 0 ]; do [ "$1" != --plot ] || plot=$2; shift; done
printf 'FAKE TEST : %s\n\nConfig  Throughput\nminivmm: 1234.5\n' "${plot##*/}"
[ -n "$plot" ] && printf '<svg xmlns="http://www.w3.org/2000/svg"><text>%s</text></svg>\n' "$FAKE_RUN" >"$plot"
[ -z "${FAKE_FAIL:-}" ] || [[ "$args" != *"$FAKE_FAIL"* ]] || exit 1
EOF
chmod +x "$FAKE"
export NETBENCH=$FAKE FAKE_LOG=$TEST_TMP/fake.log GNUPLOT=true FAKE_RUN=1
LOAD=$TEST_TMP/loadavg
export BENCH_LOADAVG=$LOAD
# all ARGS...: bench-all.sh on the copy; status in rc, its output in $TEST_TMP/all.out, .err
all() {
	rc=0
	timeout 60 "$ALL" --doc "$DOC" "$@" >"$TEST_TMP/all.out" 2>"$TEST_TMP/all.err" || rc=$?
}
# outside FILE: the file without the section between the markers
outside() { sed '/^<!-- bench-all: begin -->$/,/^<!-- bench-all: end -->$/d' "$1"; }
# inside FILE: the section between the markers
inside() { sed -n '/^<!-- bench-all: begin -->$/,/^<!-- bench-all: end -->$/p' "$1"; }

# --dry-run: the commands, runs nothing. Without QEMU minivmm alone, with it against QEMU.
SWEEPS="--dir g2h --ceiling --probe-args net.txwait=halt --sizes '32 64 128 256 512 1024 65507' VMS --rounds R --secs 2 --plot docs/plots/udp-g2h.svg
--dir h2g --ceiling --probe-args net.rxwait=halt --sizes '64 512 1472 65507' VMS --rounds R --secs 2 --plot docs/plots/udp-h2g.svg
--dir rr --ceiling --sizes '64 4000' VMS --rounds R --secs 2 --plot docs/plots/udp-rr.svg
--proto tcp --dir g2h --offload on --probe-args net.txwait=halt --sizes '64 1448 65536' VMS --rounds R --secs 2 --plot docs/plots/tcp-g2h-on.svg
--proto tcp --dir g2h --offload off --probe-args net.txwait=halt --sizes '64 1448 65536' VMS --rounds R --secs 2 --plot docs/plots/tcp-g2h-off.svg
--proto tcp --dir h2g --offload on --sizes '64 1448 65536' VMS --rounds R --secs 2 --plot docs/plots/tcp-h2g-on.svg
--proto tcp --dir h2g --offload off --sizes '64 1448 65536' VMS --rounds R --secs 2 --plot docs/plots/tcp-h2g-off.svg
--proto tcp --dir g2g --sizes '64 1448 65536' VMS --rounds R --secs 2 --plot docs/plots/tcp-g2g.svg
--proto tcp --dir rr --ceiling --sizes '1 64' VMS --rounds R --secs 2 --plot docs/plots/tcp-rr.svg
--proto tcp --dir crr --ceiling --sizes 64 VMS --rounds R --secs 2 --plot docs/plots/tcp-crr.svg"
# expect VMS ROUNDS: the dry run's expected output
expect() { sed "s|^|$FAKE |; s|VMS|$1|; s|--rounds R|--rounds $2|" <<<"$SWEEPS"; }
out=$(NETBENCH=$FAKE QEMU=/nonexistent/qemu "$ALL" --dry-run) || fail "--dry-run failed"
[ "$out" = "$(expect "--config minivmm:" 5)" ] || fail "--dry-run without QEMU: $out"
out=$(cd / && QEMU=true "$ALL" --dry-run --rounds 3) || fail "--dry-run failed"
[ "$out" = "$(expect "--compare qemu: minivmm:" 3)" ] || fail "--dry-run with QEMU, --rounds 3: $out"
[ ! -e "$FAKE_LOG" ] || fail "--dry-run ran: $(cat "$FAKE_LOG")"

# A loaded machine: refused before anything runs, the file as it was.
export QEMU=/nonexistent/qemu
echo "3.00 2.00 1.00 1/100 4242" >"$LOAD"
all
[ $rc = 2 ] && grep -q 'load average 3.00 (1 minute) is over 0.5' "$TEST_TMP/all.err" ||
	fail "loaded machine: status $rc, $(cat "$TEST_TMP/all.err")"
[ ! -e "$FAKE_LOG" ] || fail "loaded machine: ran anyway: $(cat "$FAKE_LOG")"
cmp -s "$DOC" "$TEST_TMP/orig.md" || fail "loaded machine: the file changed"
[ ! -e "$DOCS/plots" ] || fail "loaded machine: plots written"

# ... --force: runs, says so; only the section changes; every sweep's command, table and plot.
all --force
[ $rc = 0 ] || fail "--force: status $rc, $(cat "$TEST_TMP/all.err")"
grep -q 'run with --force on a loaded machine (load average 3.00 over 0.5)' "$TEST_TMP/all.err" ||
	fail "--force: not said: $(cat "$TEST_TMP/all.err")"
[ "$(wc -l <"$FAKE_LOG")" = 10 ] || fail "--force: not 10 sweeps: $(cat "$FAKE_LOG")"
[ "$(outside "$DOC")" = "$(outside "$TEST_TMP/orig.md")" ] || fail "text outside the markers changed: $(diff <(outside "$TEST_TMP/orig.md") <(outside "$DOC"))"
[ "$(inside "$DOC")" != "$(inside "$TEST_TMP/orig.md")" ] || fail "the section did not change"
grep -q '^\*\*Run with --force on a loaded machine' "$DOC" || fail "--force: the file does not say so"
section=$(inside "$DOC")
for n in udp-g2h udp-h2g udp-rr tcp-g2h-on tcp-g2h-off tcp-h2g-on tcp-h2g-off tcp-g2g tcp-rr tcp-crr; do
	# (the plot where it was written: beside --doc)
	cmd=$(expect "--config minivmm:" 5 | grep -F -- "--plot docs/plots/$n.svg" | sed "s|docs/plots|$DOCS/plots|")
	grep -qxF "    $cmd" <<<"$section" || fail "$n: its command is not in the section"
	# the table as printed, indented as a code block (the stand-in names its plot)
	grep -qxF "    FAKE TEST : $n.svg" <<<"$section" || fail "$n: its table is not in the section"
	grep -qF "](plots/$n.svg)" <<<"$section" || fail "$n: no plot in the section"
	grep -q '<text>1</text>' "$DOCS/plots/$n.svg" || fail "$n: plot not copied to $DOCS/plots"
done
[ "$(grep -c ', load average 3.00 2.00 1.00 at the start:$' <<<"$section")" = 10 ] ||
	fail "no machine line per sweep: $section"
grep -q "^$(date -u +%Y-%m-%d) [0-9:]* UTC; .*, $(nproc) cores, kernel $(uname -r), load average" <<<"$section" ||
	fail "the machine line: $section"

# A quiet machine: no --force needed, nothing said about load; the section replaced, not added.
echo "0.10 0.20 0.30 1/100 4242" >"$LOAD"
rm -f "$FAKE_LOG"
FAKE_RUN=2 all
[ $rc = 0 ] || fail "quiet machine: status $rc, $(cat "$TEST_TMP/all.err")"
! grep -q 'force' "$TEST_TMP/all.err" "$DOC" || fail "quiet machine: --force mentioned"
[ "$(outside "$DOC")" = "$(outside "$TEST_TMP/orig.md")" ] || fail "second run: text outside the markers changed"
[ "$(grep -c '^### UDP, guest to host$' "$DOC")" = 1 ] || fail "second run: the section was not replaced"
grep -q '<text>2</text>' "$DOCS/plots/udp-rr.svg" || fail "second run: plot not replaced"

# A failed sweep: all of them run, nothing written.
cp "$DOC" "$TEST_TMP/before.md"
rm -f "$FAKE_LOG"
FAKE_RUN=3 FAKE_FAIL="--proto tcp --dir h2g --offload on" all
[ $rc = 1 ] && grep -q 'failed: tcp-h2g-on;' "$TEST_TMP/all.err" ||
	fail "failed sweep: status $rc, $(cat "$TEST_TMP/all.err")"
[ "$(wc -l <"$FAKE_LOG")" = 10 ] || fail "failed sweep: not every sweep ran"
cmp -s "$DOC" "$TEST_TMP/before.md" || fail "failed sweep: the file changed"
! grep -q '<text>3</text>' "$DOCS"/plots/*.svg || fail "failed sweep: plots changed"

# Markers missing (or twice): refused before anything runs.
rm -f "$FAKE_LOG"
grep -v '^<!-- bench-all: end -->$' "$TEST_TMP/orig.md" >"$DOC"
all
[ $rc = 2 ] && grep -q 'needs the lines' "$TEST_TMP/all.err" || fail "no end marker: status $rc, $(cat "$TEST_TMP/all.err")"
{ cat "$TEST_TMP/orig.md"; echo '<!-- bench-all: begin -->'; } >"$DOC"
all
[ $rc = 2 ] || fail "two begin markers: status $rc"
[ ! -e "$FAKE_LOG" ] || fail "bad markers: ran anyway"
exit 0
