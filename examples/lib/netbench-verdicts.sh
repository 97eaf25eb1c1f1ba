# shellcheck shell=bash
# Whether a netbench.sh --proto tcp row is valid, from the result lines of its ends (the probe's
# "probe: tcp_* ..." lines, or tcpperf's "tcpperf: mode=..." for the host tool and the netns:
# stand-in) and the guest's console. Sourced by netbench.sh; pure (no files written, no exit) so
# that tests/integration/test_netbench_verdicts.sh can feed it crafted lines.
# A verdict returns 0 when the row is valid; else 1, with VERDICT the reason and VERDICT_END the
# end to blame (the suffix of the run's name whose logs netbench shows).

# kv KEY LINE: the value of KEY=value in LINE
kv() { sed -n "s/.*[ :]$1=\([^ ]*\).*/\1/p" <<<"$2"; }

# tcp_line_failed CONSOLE LINE: the guest (its console file CONSOLE) or its stand-in (result
# LINE) failed a check. The probe's line has no ok=; its failures are "probe: FAIL" or bad=N.
tcp_line_failed() {
	local bad
	bad=$(kv bad "$2")
	grep -q '^probe: FAIL' "$1" 2>/dev/null || [ "$(kv ok "$2")" = 0 ] ||
		[ "${bad:-0}" != 0 ]
}

# tcp_reject END WHY: the verdict's "not valid" (status 1).
tcp_reject() {
	VERDICT_END=$1 VERDICT=$2
	return 1
}

# tcp_verdict DIR CONSOLE LINE PEER_LINE [PEER_CONSOLE]: the row of direction DIR from the
# guest's result LINE (g2g: guest A's), its console CONSOLE, and the other end's PEER_LINE: the
# host tool's (tcpperf recv, send, rr-server, crr-server), for g2g guest B's, whose console is
# PEER_CONSOLE. VERDICT_END: g or host (g2g: a or b).
tcp_verdict() {
	local dir=$1 con=$2 line=$3 hl=$4 peer=${5:-}
	# shellcheck disable=SC2034 # the caller's
	VERDICT="" VERDICT_END=""
	case "$dir" in
	g2h)
		[ -n "$hl" ] || tcp_reject host "no result from tcpperf recv" || return
		[ "$(kv ok "$hl")" = 1 ] || tcp_reject host "tcpperf recv: $hl" || return
		if [ -z "$line" ] || tcp_line_failed "$con" "$line"; then
			tcp_reject g "the guest's stream failed" || return
		fi
		;;
	h2g)
		[ -n "$line" ] || tcp_reject g "no result line from the guest" || return
		! tcp_line_failed "$con" "$line" || tcp_reject g "the guest's check failed: $line" || return
		[ "$(kv ok "$hl")" = 1 ] || tcp_reject host "tcpperf send: $hl" || return
		;;
	g2g)
		# B checks every byte: its verdict first; A's stream must also have ended cleanly
		[ -n "$hl" ] || tcp_reject b "no result line from guest B" || return
		! tcp_line_failed "$peer" "$hl" || tcp_reject b "guest B's check failed: $hl" || return
		if [ -z "$line" ] || tcp_line_failed "$con" "$line"; then
			tcp_reject a "guest A's stream failed" || return
		fi
		;;
	rr)
		[ -n "$line" ] || tcp_reject g "no result line from the guest" || return
		! tcp_line_failed "$con" "$line" || tcp_reject g "request/response failed: $line" || return
		# the server saw the connection end cleanly and echoed at least every transaction the
		# guest counted (it may have echoed one the guest stopped counting before)
		local st gt
		st=$(kv trans "$hl") gt=$(kv trans "$line")
		if [ "$(kv ok "$hl")" != 1 ] || ! [[ "$st" =~ ^[0-9]+$ && "$gt" =~ ^[0-9]+$ ]] ||
			[ "$st" -lt "$gt" ]; then
			tcp_reject host "tcpperf rr-server: $hl; the guest: $line" || return
		fi
		;;
	crr)
		[ -n "$line" ] || tcp_reject g "no result line from the guest" || return
		! tcp_line_failed "$con" "$line" ||
			tcp_reject g "connect/request/response failed: $line" || return
		# every connection echoed and closed cleanly (the server's ok: no reset, no error), and
		# both ends count the same transactions: a connection per transaction
		local t
		t=$(kv trans "$line")
		if [ "$(kv ok "$hl")" != 1 ] || [ "$(kv trans "$hl")" != "$t" ] ||
			[ "$(kv conns "$hl")" != "$t" ]; then
			tcp_reject host "tcpperf crr-server: $hl; the guest: $line" || return
		fi
		;;
	*) tcp_reject host "tcp_verdict: unknown direction $dir" || return ;;
	esac
}

# tcp_writes_verdict LINE SIZE MIB: the sender's result LINE (the probe's tcp_stream or tcpperf
# send's) says it wrote MIB MiB in writes of SIZE bytes: write=SIZE and at least one call per
# write (a partial send() makes more). sends= must be a number: a garbled line is no pass.
tcp_writes_verdict() {
	local w n
	w=$(kv write "$1") n=$(kv sends "$1")
	if [ "$w" != "$2" ] || ! [[ "$n" =~ ^[0-9]{1,18}$ ]] ||
		[ "$((10#$n))" -lt $(((($3 << 20) + $2 - 1) / $2)) ]; then
		tcp_reject g "the sender did not write $2 bytes at a time (write=$w sends=$n)"
	fi
}
