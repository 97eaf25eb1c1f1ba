#!/usr/bin/env bash
# examples/netbench.sh --breakdown: per thread of the VMM (here the no-VM stand-ins netns:,
# tapwrite: and tapread:) and of the host tool, busy %, CPU and context switches per packet,
# in the table and in --json; --perf counts or says why it cannot; what --breakdown cannot
# measure is refused.
# Where /dev/kvm works, also minivmm's own counters (exits, kicks, interrupts per packet).
# Nothing the script made may outlive it.
source "$(dirname "$0")/lib.sh"
kvm_usable || runs_no_vmm
source "$(dirname "$0")/netns.sh"
netns_require
command -v cc >/dev/null || skip "no C compiler"

BENCH=$ROOT/examples/netbench.sh
export NETBENCH_NS=nbbd-$$
on_exit "_netns_destroy '$NETBENCH_NS-g0'; _netns_destroy '$NETBENCH_NS'"

# run NAME ARGS...: netbench --breakdown with ARGS (a few seconds); its output in $out
run() {
	local name=$1
	shift
	out=$(timeout 120 "$BENCH" --secs 1 --breakdown "$@" 2>"$TEST_TMP/$name.err") ||
		{ cat "$TEST_TMP/$name.err"; fail "netbench $*: failed: $out"; }
}
# breakdown JSON CONFIG: CONFIG's "breakdown" object in netbench's --json output
breakdown() {
	grep -o "{\"config\":\"$2\",[^{]*\"breakdown\":{\"window_s\":.*" <<<"$1" |
		sed 's/,"speedup_pct".*//; s/}}\]}$//; s/}},{"config".*//'
}
# num OBJ KEY: the first value of KEY in OBJ
num() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -n 1 | cut -d: -f2; }
# check_threads CFG OBJ: window and packets positive; a thread of each process; every figure a
# number >= 0; busy % at most 100 per thread (one CPU), with a margin for the sampling.
check_threads() {
	local cfg=$1 bd=$2 t p
	[ -n "$bd" ] || fail "$cfg: no breakdown in: $out"
	awk -v w="$(num "$bd" window_s)" -v n="$(num "$bd" packets)" 'BEGIN { exit !(w > 0.5 && n > 0) }' ||
		fail "$cfg: window or packets: $bd"
	for p in vmm host; do
		grep -q "{\"proc\":\"$p\",\"thread\":\"[^\"]*\",\"tid\":[1-9]" <<<"$bd" || fail "$cfg: no $p thread: $bd"
	done
	while read -r t; do
		for k in busy_pct cpu_us_per_pkt ctxsw_per_pkt invol_ctxsw_per_pkt; do
			v=$(num "$t" $k)
			awk -v v="$v" -v k=$k 'BEGIN { exit !(v ~ /^[0-9.]+$/ && (k != "busy_pct" || v <= 110)) }' ||
				fail "$cfg: $k is '$v' in $t"
		done
	done < <(grep -o '{"proc":[^}]*}' <<<"$bd")
	# The stand-in sends or answers every packet itself: it runs, and sleeps or is preempted.
	t=$(grep -o '{"proc":"vmm"[^}]*}' <<<"$bd" | head -n 1)
	awk -v c="$(num "$t" cpu_us_per_pkt)" -v b="$(num "$t" busy_pct)" 'BEGIN { exit !(c > 0 && b > 0) }' ||
		fail "$cfg: the stand-in did not run: $t"
}

# Guest to host, the stand-ins side by side, JSON: per-thread figures, no VMM counters.
run g2h --compare netns: tapwrite: --dir g2h --sizes 64 --json
if command -v python3 >/dev/null; then
	python3 -c 'import json, sys; json.load(sys.stdin)' <<<"$out" || fail "not JSON: $out"
fi
for cfg in netns: tapwrite:; do
	bd=$(breakdown "$out" $cfg)
	check_threads $cfg "$bd"
	grep -q '"vmm_counters":null' <<<"$bd" || fail "$cfg: VMM counters for a stand-in: $bd"
done

# Host to guest: the host sends a second longer than the stand-in counts, then exits; the
# window ends with the last sample that still found it.
run h2g --config tapread: --dir h2g --sizes 64 --json
check_threads tapread: "$(breakdown "$out" tapread:)"

# Request/response, the table: a line per thread under the row, wake-ups per transaction;
# --perf counts, or says why not.
run rr --config netns: --dir rr --sizes 64 --perf
grep -q '^Where each packet.s time goes' <<<"$out" || fail "rr: no breakdown section: $out"
for p in vmm host; do
	line=$(grep -E "^    $p +udpperf +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$" <<<"$out") ||
		fail "rr: no $p thread line: $out"
	# udp_rr: each side sleeps for every answer, so about one switch per transaction each.
	awk -v cs="$(awk '{ print $6 }' <<<"$line")" 'BEGIN { exit !(cs >= 0.5 && cs < 3) }' ||
		fail "rr: $p context switches per transaction: $line"
done
grep -q 'VMM counters (exits, kicks, interrupts): n/a (minivmm only)' <<<"$out" ||
	fail "rr: the stand-in's VMM counters are not n/a: $out"
grep -q -- '--perf skipped: \|perf (the VMM process' <<<"$out" || fail "rr --perf: neither counts nor a note: $out"

# What --breakdown cannot measure is refused (--timeout 2: a wrongly accepted run ends soon).
refused() {
	local want=$1 rc=0
	shift
	"$BENCH" --secs 1 --timeout 2 "$@" >/dev/null 2>"$TEST_TMP/refused.err" || rc=$?
	[ $rc = 2 ] && grep -q -- "$want" "$TEST_TMP/refused.err" ||
		fail "$*: status $rc, $(cat "$TEST_TMP/refused.err")"
}
refused '--breakdown measures UDP' --dir g2g --config netns: --breakdown --sizes 64
refused '--breakdown measures UDP' --dir rr --proto tcp --config netns: --breakdown
refused '--perf goes with --breakdown' --dir g2h --config netns: --perf --sizes 64

ip netns list | grep -qw -- "$NETBENCH_NS" && fail "netbench left its namespace behind"
for p in $(pgrep -f "build/examples/(tapsend|udpperf)"); do
	[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$ROOT" ] && fail "netbench left host tools running"
done

# minivmm: its own counters per packet, from the control socket's status before and after.
if ! kvm_usable; then
	echo "note: the minivmm part is skipped: /dev/kvm is not usable here"
	exit 0
fi
run g2hvm --config minivmm: --dir g2h --sizes 64 --json
bd=$(breakdown "$out" minivmm:)
[ -n "$bd" ] || fail "minivmm: no breakdown: $out"
grep -q '"proc":"vmm","thread":"vcpu0"' <<<"$bd" || fail "minivmm: no vcpu0 thread: $bd"
grep -q '"proc":"vmm","thread":"io"' <<<"$bd" || fail "minivmm: no io thread: $bd"
# A kick covers one datagram or several (the I/O thread drains what it finds).
for k in kicks_per_pkt wakeups_per_pkt; do
	v=$(num "$bd" $k)
	awk -v v="$v" 'BEGIN { exit !(v >= 0 && v <= 2) }' || fail "minivmm g2h: $k is '$v': $bd"
done
grep -q '"exits_per_pkt":{"io":[0-9.]*,"mmio":[0-9.]*,"hlt":[0-9.]*,"other":[0-9.]*}' <<<"$bd" ||
	fail "minivmm g2h: exits per packet: $bd"
# h2g: the guest stops counting (and minivmm exits) before the host stops sending; the host
# tool's last status request then meets a closed socket and must not die of SIGPIPE.
run h2gvm --config minivmm: --dir h2g --sizes 64 --json
bd=$(breakdown "$out" minivmm:)
[ -n "$bd" ] || fail "minivmm h2g: no breakdown: $out"
grep -q '"proc":"vmm","thread":"io"' <<<"$bd" || fail "minivmm h2g: no io thread: $bd"
grep -q '"proc":"vmm","thread":"vcpu0"' <<<"$bd" || fail "minivmm h2g: no vcpu0 thread: $bd"
# The probe posts receive buffers in batches: a kick per packet at most.
awk -v v="$(num "$bd" kicks_per_pkt)" 'BEGIN { exit !(v > 0 && v <= 1) }' ||
	fail "minivmm h2g: kicks per packet: $bd"
run rrvm --compare minivmm:poll-us=0 minivmm: --dir rr --sizes 64 --json
bd=$(breakdown "$out" minivmm:poll-us=0)
# One request in flight: the I/O thread is idle when it comes, so without polling each one is
# kicked (tx=bh).
awk -v k="$(num "$bd" kicks_per_pkt)" 'BEGIN { exit !(k > 0.5 && k < 3) }' ||
	fail "minivmm rr, polling off: kicks per transaction: $bd"
# With polling (the default) a request is kicked or found by a poll while kicks were off: the
# two together account for every one (how many polls catch depends on the host's speed).
bd=$(breakdown "$out" minivmm:)
awk -v k="$(num "$bd" kicks_per_pkt)" -v p="$(num "$bd" poll_tx_per_pkt)" \
	'BEGIN { exit !(k + p > 0.5 && k + p < 3) }' ||
	fail "minivmm rr, polling on: kicks and polled frames per transaction: $bd"
exit 0
