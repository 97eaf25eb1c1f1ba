#!/usr/bin/env bash
# examples/netbench.sh --proto tcp end to end, briefly: g2h, h2g, g2g, rr and crr (a connection per
# transaction, both ends counting the same clean closes) through the script's
# namespace with the netns: stand-in (tcpperf on both ends: no /dev/kvm needed), and with
# minivmm and the probe where /dev/kvm works; every row must have moved data with every byte
# checked, the JSON must say tcp, a stream row per write size (--sizes) with its sender's
# writes of that size, the UDP-only directions are refused, --offload on|off reaches the probe
# (where /dev/kvm works: TSO frames with on, none with off), and nothing the script made may
# outlive it.
source "$(dirname "$0")/lib.sh"
kvm_usable || runs_no_vmm
source "$(dirname "$0")/netns.sh"
netns_require
command -v cc >/dev/null || skip "no C compiler"

BENCH=$ROOT/examples/netbench.sh
export NETBENCH_NS=nbtcp-test-$$

# value JSON CONFIG KEY [SIZE]: KEY of CONFIG's (only, or message size SIZE's) row in netbench's
# --json output
value() {
	grep -o "{\"config\":\"$2\",\"message_bytes\":${4:-[0-9]*},[^}]*}" <<<"$1" |
		sed -n "s/.*\"$3\":\([^,}]*\).*/\1/p"
}
# positive JSON CONFIG KEY [SIZE]
positive() {
	local v
	v=$(value "$@")
	awk -v v="$v" 'BEGIN { exit !(v + 0 > 0) }' || fail "$2: $3 is '$v' in: $1"
}

configs=(netns:)
kvm_usable && configs+=(minivmm:)
for cfg in "${configs[@]}"; do
	for dir in g2h h2g g2g rr crr; do
		sizes=(--sizes "64 65536")
		[[ $dir != *rr ]] || sizes=()
		out=$(timeout 120 "$BENCH" --proto tcp --dir $dir --config "$cfg" --mib 4 --secs 1 --json \
			"${sizes[@]}" 2>"$TEST_TMP/$dir.err") || { cat "$TEST_TMP/$dir.err"; fail "$cfg $dir failed: $out"; }
		grep -q "^{\"dir\":\"$dir\",\"proto\":\"tcp\"," <<<"$out" || fail "$cfg $dir: not tcp: $out"
		if [[ $dir == *rr ]]; then
			positive "$out" "$cfg" tps
			positive "$out" "$cfg" transactions
			awk -v a="$(value "$out" "$cfg" lat_us_p50)" -v b="$(value "$out" "$cfg" lat_us_p90)" \
				-v c="$(value "$out" "$cfg" lat_us_p99)" 'BEGIN { exit !(a > 0 && a <= b && b <= c) }' ||
				fail "$cfg rr: percentiles out of order: $out"
		else
			# a row per write size, each its own stream (every byte checked by the receiver)
			for size in 64 65536; do
				positive "$out" "$cfg" mbps $size
				positive "$out" "$cfg" elapsed_s $size
				positive "$out" "$cfg" segs $size
				[ "$(value "$out" "$cfg" write_bytes $size)" = $size ] || fail "$cfg $dir: no $size row: $out"
				m=$(value "$out" "$cfg" mss $size)
				[ "${m:-0}" -ge 536 ] && [ "$m" -le 1460 ] || fail "$cfg $dir: MSS '$m' in: $out"
			done
			if [ "$cfg" = minivmm: ] && [ $dir != h2g ]; then
				# 64-byte writes are 64-byte segments while the window is open (no Nagle):
				# the first flight at least
				s=$(value "$out" "$cfg" small_segs 64)
				[ "${s:-0}" -ge 100 ] || fail "$cfg g2h: 64 B writes, $s short segments: $out"
			fi
		fi
	done
done

# --offload on|off: the same offloads for every VM. The netns: stand-in is no VM: only the run's
# own "offload" says it. Under minivmm (a tap: CSUM and TSO4 offered) the probe negotiates
# both and sends TSO frames with on, neither with off; every byte is checked either way.
out=$(timeout 120 "$BENCH" --proto tcp --dir g2h --config netns: --mib 4 --offload off --json \
	2>"$TEST_TMP/off.err") || { cat "$TEST_TMP/off.err"; fail "netns: --offload off failed: $out"; }
grep -q '"offload":"off","configs"' <<<"$out" || fail "no offload in the JSON: $out"
if kvm_usable; then
	for o in on off; do
		# One row, 64 KiB writes (TSO's case; the default is a row per write size).
		out=$(timeout 120 "$BENCH" --proto tcp --dir g2h --config minivmm: --mib 16 --offload $o \
			--sizes 65536 --json 2>"$TEST_TMP/$o.err") ||
			{ cat "$TEST_TMP/$o.err"; fail "--offload $o failed: $out"; }
		positive "$out" minivmm: mbps
		tso=$(value "$out" minivmm: tso_frames)
		if [ $o = on ]; then
			grep -q '{"config":"minivmm:",[^}]*"offload":"csum,tso4"' <<<"$out" ||
				fail "--offload on: the probe did not take CSUM and TSO4: $out"
			positive "$out" minivmm: tso_frames
		else
			grep -q '{"config":"minivmm:",[^}]*"offload":"off"' <<<"$out" && [ "$tso" = 0 ] ||
				fail "--offload off: offloads taken or $tso TSO frames: $out"
		fi
	done
fi
for args in "--offload maybe" "--offload on --config minivmm:offload=off"; do
	rc=0
	# shellcheck disable=SC2086 # the words are separate arguments
	"$BENCH" --proto tcp $args --secs 1 >/dev/null 2>"$TEST_TMP/refused.err" || rc=$?
	[ $rc != 0 ] && grep -q 'offload' "$TEST_TMP/refused.err" ||
		fail "$args: status $rc, $(cat "$TEST_TMP/refused.err")"
done

# The table, once: TCP's title and the stream columns.
out=$(timeout 120 "$BENCH" --proto tcp --dir g2h --config netns: --mib 8 2>"$TEST_TMP/table.err") ||
	{ cat "$TEST_TMP/table.err"; fail "the table run failed: $out"; }
grep -q '^TCP STREAM TEST from 10.0.2.15 .* : 8 MiB per run, message size = write size$' <<<"$out" ||
	fail "no TCP title: $out"
# the default write sizes, a row each
for size in 64 1448 65536; do
	grep -Eq "^netns: +- +$size +[0-9.]+ +[0-9.]+ " <<<"$out" || fail "no netns: row for $size: $out"
done
# a write size past 64 KiB is refused
rc=0
"$BENCH" --proto tcp --dir g2h --sizes 65537 >/dev/null 2>"$TEST_TMP/refused.err" || rc=$?
[ $rc != 0 ] && grep -q '1 to 65536' "$TEST_TMP/refused.err" || fail "--sizes 65537: status $rc, $(cat "$TEST_TMP/refused.err")"

# What TCP does not measure is refused, with a reason.
for args in "--dir pps" "--ceiling" "--dir g2g --ceiling" "--config tapwrite:" "--proto udp --dir crr"; do
	rc=0
	# shellcheck disable=SC2086 # the words are separate arguments
	"$BENCH" --proto tcp $args --secs 1 >/dev/null 2>"$TEST_TMP/refused.err" || rc=$?
	[ $rc != 0 ] && grep -q 'tcp\|TCP\|UDP only\|ceiling' "$TEST_TMP/refused.err" ||
		fail "--proto tcp $args: status $rc, $(cat "$TEST_TMP/refused.err")"
done

ip netns list | grep -qw -- "$NETBENCH_NS" && fail "netbench left its namespace behind"
for p in $(pgrep -f "build/examples/tcpperf"); do
	[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$ROOT" ] && fail "netbench left tcpperf running"
done
exit 0
