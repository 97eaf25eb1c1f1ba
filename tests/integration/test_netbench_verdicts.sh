#!/usr/bin/env bash
# examples/lib/netbench-verdicts.sh, the checks that decide whether a netbench --proto tcp row is
# valid, fed crafted result lines (no guest, no network, no root): a valid row of each direction
# is accepted, with the probe's lines and with the netns: stand-in's (tcpperf), and each fault is
# rejected, blaming the right end: ok=0, bad=N, "probe: FAIL" on the console, a missing line,
# crr's server and guest disagreeing on transactions or connections, writes of the wrong size,
# too few sends.
source "$(dirname "$0")/lib.sh"
runs_no_vmm
source "$ROOT/examples/lib/netbench-verdicts.sh"

# The lines, as printed by firmware/tests/test_tcp_{stream,sink,rr,crr}.c and
# examples/netbench/tcpperf.c (run_send, run_recv, the rr and crr servers and clients).
P_STREAM="probe: tcp_stream bytes=4194304 secs=0.061 mbps=550.07 write=65536 sends=64 segs=2873 small_segs=0 retransmits=0 fast_retransmits=0 srtt_us=212 rto_us=200000 state=10 err=0 reentry_drops=0 tso_frames=64"
P_STREAM64="probe: tcp_stream bytes=4194304 secs=0.910 mbps=36.87 write=64 sends=65536 segs=65536 small_segs=65536 retransmits=0 fast_retransmits=0 srtt_us=95 rto_us=200000 state=10 err=0 reentry_drops=0 tso_frames=0"
P_SINK="probe: tcp_sink bytes=4194304 secs=0.058 mbps=578.52 bad=0 first_bad=0 dup_acks_sent=0 ooo_dropped=0 rx_bad=0 state=7 err=0 reentry_drops=0 rx_large=0"
P_RR="probe: tcp_rr size=1 trans=11500 secs=1.000 tps=11500 lat_us_p50=84.2 p90=95.0 p99=130.7 avg=86.9 max=412.0 bad=0 retransmits=0 srtt_us=90"
P_CRR="probe: tcp_crr size=1 trans=2300 secs=1.000 tps=2300 lat_us_p50=410.3 p90=480.1 p99=655.0 avg=432.8 max=1900.2 bad=0 time_waits=2300 tw_recycled=0 resets_sent=0 first_port=49152 next_port=51452"
T_SEND="tcpperf: mode=send mss=1448 bytes=4194304 secs=0.004 mbps=8388.61 write=65536 sends=64 segs=2897 ok=1"
T_RECV="tcpperf: mode=recv mss=1448 bytes=4194304 secs=0.004 mbps=8388.61 segs=2897 bad=0 first_bad=0 ok=1"
T_RR_SERVER="tcpperf: mode=rr-server size=1 trans=11500 ok=1"
T_CRR_SERVER="tcpperf: mode=crr-server size=1 conns=2300 trans=2300 resets=0 errors=0 ok=1"
T_RR_SERVER40K="tcpperf: mode=rr-server size=1 trans=40001 ok=1"
T_RR="tcpperf: mode=rr size=1 trans=40000 secs=1.000 tps=40000 lat_us_p50=22.1 p90=27.3 p99=41.0 bad=0 ok=1"
T_CRR="tcpperf: mode=crr size=1 trans=9000 secs=1.000 tps=9000 lat_us_p50=98.4 p90=120.0 p99=170.2 bad=0 ok=1"
T_CRR_SERVER9K="tcpperf: mode=crr-server size=1 conns=9000 trans=9000 resets=0 errors=0 ok=1"

# consoles: a passing probe's, a failing one's (whose result line can still look clean: a
# reset connection fails after the line is printed), none (the netns: stand-in has no probe)
OK_CON=$TEST_TMP/ok.out FAIL_CON=$TEST_TMP/fail.out NO_CON=$TEST_TMP/none.out
printf 'probe: tcp_sink connected mss=1460 wscale=7/7\r\n%s\r\nprobe: PASS\r\n' "$P_SINK" >"$OK_CON"
printf 'probe: tcp_sink connected mss=1460 wscale=7/7\r\n%s\r\nprobe: FAIL tcp_sink: the connection was reset\r\n' \
	"$P_SINK" >"$FAIL_CON"
: >"$NO_CON"

# accept WHAT ARGS...: tcp_verdict ARGS must hold the row valid
accept() {
	local what=$1
	shift
	tcp_verdict "$@" || fail "$what: rejected ($VERDICT_END: $VERDICT)"
}
# reject WHAT END WHY ARGS...: tcp_verdict ARGS must hold the row not valid, blaming END, saying WHY
reject() {
	local what=$1 end=$2 why=$3
	shift 3
	! tcp_verdict "$@" || fail "$what: accepted"
	[ "$VERDICT_END" = "$end" ] || fail "$what: blames '$VERDICT_END', not '$end' ($VERDICT)"
	[ "$VERDICT" = "$why" ] || fail "$what: says '$VERDICT', not '$why'"
}
# with KEY=VALUE LINE: LINE with KEY's value replaced
with() { sed "s/\([ :]${1%%=*}\)=[^ ]*/\1=${1#*=}/" <<<"$2"; }

# kv: values, a key that ends another (bad, first_bad), a missing key
[ "$(kv trans "$P_CRR")" = 2300 ] && [ "$(kv p90 "$P_CRR")" = 480.1 ] &&
	[ "$(kv bad "$(with first_bad=9 "$P_SINK")")" = 0 ] &&
	[ "$(kv conns "$T_CRR_SERVER")" = 2300 ] && [ "$(kv ok "$T_RECV")" = 1 ] &&
	[ -z "$(kv ok "$P_SINK")" ] && [ "$(kv mode "$T_SEND")" = send ] || fail "kv misreads a line"

# g2h: the guest's stream -> tcpperf recv
accept "g2h probe" g2h "$OK_CON" "$P_STREAM" "$T_RECV"
accept "g2h netns" g2h "$NO_CON" "$T_SEND" "$T_RECV"
reject "g2h no host line" host "no result from tcpperf recv" g2h "$OK_CON" "$P_STREAM" ""
bad_recv=$(with ok=0 "$(with bad=17 "$T_RECV")")
reject "g2h host bad=17 ok=0" host "tcpperf recv: $bad_recv" g2h "$OK_CON" "$P_STREAM" "$bad_recv"
reject "g2h no guest line" g "the guest's stream failed" g2h "$OK_CON" "" "$T_RECV"
reject "g2h probe FAIL" g "the guest's stream failed" g2h "$FAIL_CON" "$P_STREAM" "$T_RECV"
reject "g2h stand-in ok=0" g "the guest's stream failed" g2h "$NO_CON" "$(with ok=0 "$T_SEND")" "$T_RECV"

# h2g: tcpperf send -> the guest's sink
accept "h2g probe" h2g "$OK_CON" "$P_SINK" "$T_SEND"
accept "h2g netns" h2g "$NO_CON" "$T_RECV" "$T_SEND"
reject "h2g no guest line" g "no result line from the guest" h2g "$OK_CON" "" "$T_SEND"
l=$(with bad=3 "$P_SINK")
reject "h2g sink bad=3" g "the guest's check failed: $l" h2g "$OK_CON" "$l" "$T_SEND"
reject "h2g probe FAIL" g "the guest's check failed: $P_SINK" h2g "$FAIL_CON" "$P_SINK" "$T_SEND"
l=$(with ok=0 "$T_RECV")
reject "h2g stand-in ok=0" g "the guest's check failed: $l" h2g "$NO_CON" "$l" "$T_SEND"
l=$(with ok=0 "$T_SEND")
reject "h2g host ok=0" host "tcpperf send: $l" h2g "$OK_CON" "$P_SINK" "$l"
reject "h2g no host line" host "tcpperf send: " h2g "$OK_CON" "$P_SINK" ""

# g2g: guest A's stream -> guest B's sink; CONSOLE and LINE are A's, then B's line and console
accept "g2g probe" g2g "$OK_CON" "$P_STREAM" "$P_SINK" "$OK_CON"
accept "g2g netns" g2g "$NO_CON" "$T_SEND" "$T_RECV" "$NO_CON"
reject "g2g no line from B" b "no result line from guest B" g2g "$OK_CON" "$P_STREAM" "" "$OK_CON"
reject "g2g no line from A" a "guest A's stream failed" g2g "$OK_CON" "" "$P_SINK" "$OK_CON"
l=$(with bad=1 "$P_SINK")
reject "g2g B bad=1" b "guest B's check failed: $l" g2g "$OK_CON" "$P_STREAM" "$l" "$OK_CON"
reject "g2g B probe FAIL" b "guest B's check failed: $P_SINK" g2g "$OK_CON" "$P_STREAM" "$P_SINK" "$FAIL_CON"
reject "g2g A probe FAIL" a "guest A's stream failed" g2g "$FAIL_CON" "$P_STREAM" "$P_SINK" "$OK_CON"
l=$(with ok=0 "$T_RECV")
reject "g2g B stand-in ok=0" b "guest B's check failed: $l" g2g "$NO_CON" "$T_SEND" "$l" "$NO_CON"
reject "g2g A stand-in ok=0" a "guest A's stream failed" g2g "$NO_CON" "$(with ok=0 "$T_SEND")" "$T_RECV" "$NO_CON"

# rr: the guest's requests <-> tcpperf rr-server
accept "rr probe" rr "$OK_CON" "$P_RR" "$T_RR_SERVER"
accept "rr netns" rr "$NO_CON" "$T_RR" "$T_RR_SERVER40K"
reject "rr no guest line" g "no result line from the guest" rr "$OK_CON" "" "$T_RR_SERVER"
l=$(with bad=2 "$P_RR")
reject "rr bad=2" g "request/response failed: $l" rr "$OK_CON" "$l" "$T_RR_SERVER"
reject "rr probe FAIL" g "request/response failed: $P_RR" rr "$FAIL_CON" "$P_RR" "$T_RR_SERVER"
l=$(with ok=0 "$T_RR")
reject "rr stand-in ok=0" g "request/response failed: $l" rr "$NO_CON" "$l" "$T_RR_SERVER40K"
# the server's end: a stalled or failed connection, fewer echoes than the guest counted
for h in "$(with ok=0 "$T_RR_SERVER")" "$(with trans=11499 "$T_RR_SERVER")" \
	"$(with trans=x "$T_RR_SERVER")" ""; do
	reject "rr server '$h'" host "tcpperf rr-server: $h; the guest: $P_RR" rr "$OK_CON" "$P_RR" "$h"
done

# crr: a connection per transaction, guest <-> tcpperf crr-server; both ends must agree
accept "crr probe" crr "$OK_CON" "$P_CRR" "$T_CRR_SERVER"
accept "crr netns" crr "$NO_CON" "$T_CRR" "$T_CRR_SERVER9K"
reject "crr no guest line" g "no result line from the guest" crr "$OK_CON" "" "$T_CRR_SERVER"
l=$(with bad=1 "$P_CRR")
reject "crr bad=1" g "connect/request/response failed: $l" crr "$OK_CON" "$l" "$T_CRR_SERVER"
reject "crr probe FAIL" g "connect/request/response failed: $P_CRR" crr "$FAIL_CON" "$P_CRR" "$T_CRR_SERVER"
l=$(with ok=0 "$T_CRR")
reject "crr stand-in ok=0" g "connect/request/response failed: $l" crr "$NO_CON" "$l" "$T_CRR_SERVER9K"
# the server: a reset (ok=0), a transaction the guest did not count, a connection without one
for h in "$(with ok=0 "$(with resets=1 "$T_CRR_SERVER")")" "$(with trans=2299 "$T_CRR_SERVER")" \
	"$(with conns=2301 "$T_CRR_SERVER")" "$(with conns=2299 "$T_CRR_SERVER")" ""; do
	reject "crr server '$h'" host "tcpperf crr-server: $h; the guest: $P_CRR" crr "$OK_CON" "$P_CRR" "$h"
done
# the guest counting other than the server (its line otherwise clean)
l=$(with trans=2301 "$P_CRR")
reject "crr guest trans=2301" host "tcpperf crr-server: $T_CRR_SERVER; the guest: $l" crr "$OK_CON" "$l" "$T_CRR_SERVER"

reject "unknown direction" host "tcp_verdict: unknown direction pps" pps "$OK_CON" "$P_RR" "$T_RR_SERVER"

# The writes: write=SIZE, and at least ceil(MIB MiB / SIZE) sends.
writes_ok() { tcp_writes_verdict "$@" || fail "writes $*: rejected ($VERDICT)"; }
writes_bad() {
	! tcp_writes_verdict "$@" || fail "writes $*: accepted"
	[ "$VERDICT" = "the sender did not write $2 bytes at a time (write=$(kv write "$1") sends=$(kv sends "$1"))" ] ||
		fail "writes $*: says '$VERDICT'"
}
writes_ok "$P_STREAM" 65536 4
writes_ok "$P_STREAM64" 64 4
writes_ok "$T_SEND" 65536 4
writes_ok "$(with sends=70 "$T_SEND")" 65536 4 # partial send()s: more calls than writes
# 4 MiB in 1448-byte writes: 2896 full ones and a last short one
writes_ok "$(with write=1448 "$(with sends=2897 "$T_SEND")")" 1448 4
writes_bad "$(with write=1448 "$(with sends=2896 "$T_SEND")")" 1448 4
writes_bad "$P_STREAM" 64 4                            # another write size
writes_bad "$P_STREAM" 65536 8                         # 64 sends cannot have written 8 MiB
writes_bad "$(with sends=63 "$P_STREAM")" 65536 4      # too few sends
writes_bad "${P_STREAM/ sends=64/}" 65536 4             # none said
writes_bad "$(with sends=6x4 "$P_STREAM")" 65536 4     # garbled
writes_bad "$(with sends=-64 "$P_STREAM")" 65536 4
writes_bad "${P_STREAM/ write=65536/}" 65536 4
exit 0
