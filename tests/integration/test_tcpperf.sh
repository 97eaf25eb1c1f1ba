#!/usr/bin/env bash
# examples/netbench/tcpperf.c host to host over 127.0.0.1 (no guest, no /dev/kvm): a 64 MiB
# stream with every byte checked, one in writes of 1000 bytes, a stream with one byte flipped
# or cut short (caught: bad=, non-zero exit), request/response with ordered latency percentiles (a wrong echo caught), and
# connect/request/response (crr) against crr-server, which catches a client that resets.
source "$(dirname "$0")/lib.sh"
runs_no_vmm
command -v cc >/dev/null || skip "no C compiler"

TCPPERF=$TEST_TMP/tcpperf
cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$TCPPERF" "$ROOT/examples/netbench/tcpperf.c" ||
	fail "cannot build tcpperf"

# serve NAME ARGS...: tcpperf ARGS on a free port in the background; sets PORT and SRV_PID.
serve() {
	local name=$1
	shift
	"$TCPPERF" "$@" --port 0 --ready-file "$TEST_TMP/$name.port" >"$TEST_TMP/$name.out" \
		2>"$TEST_TMP/$name.err" &
	SRV_PID=$!
	on_exit "kill $SRV_PID 2>/dev/null"
	PORT=
	for _ in $(seq 200); do
		PORT=$(grep -xE '[0-9]+' "$TEST_TMP/$name.port" 2>/dev/null) && break
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.05
	done
	[ -n "$PORT" ] || { cat "$TEST_TMP/$name.err" >&2; fail "$name: tcpperf did not listen"; }
}

# field FILE KEY: KEY's value on the tcpperf line in FILE.
field() { sed -n "s/^tcpperf: .* $2=\([^ ]*\).*/\1/p" "$1"; }

# 64 MiB, every byte checked.
serve stream recv --mib 64
"$TCPPERF" send --dest 127.0.0.1 --port "$PORT" --mib 64 >"$TEST_TMP/send.out" ||
	fail "stream: tcpperf send failed: $(cat "$TEST_TMP/send.out")"
wait "$SRV_PID" || fail "stream: tcpperf recv failed: $(cat "$TEST_TMP/stream.out" "$TEST_TMP/stream.err")"
grep -Eq '^tcpperf: mode=recv mss=[0-9]+ bytes=67108864 secs=[0-9.]+ mbps=[0-9.]+ segs=[0-9]+ bad=0 first_bad=0 ok=1$' \
	"$TEST_TMP/stream.out" || fail "stream: $(cat "$TEST_TMP/stream.out")"
grep -Eq '^tcpperf: mode=send mss=[0-9]+ bytes=67108864 .* ok=1$' "$TEST_TMP/send.out" ||
	fail "stream: $(cat "$TEST_TMP/send.out")"

# Writes of 1000 bytes (--write): a send() per write, every byte still right.
serve w1000 recv --mib 1
"$TCPPERF" send --dest 127.0.0.1 --port "$PORT" --mib 1 --write 1000 >"$TEST_TMP/w1000.send" ||
	fail "write: tcpperf send failed: $(cat "$TEST_TMP/w1000.send")"
wait "$SRV_PID" || fail "write: tcpperf recv failed: $(cat "$TEST_TMP/w1000.out")"
grep -q ' bytes=1048576 .* bad=0 first_bad=0 ok=1$' "$TEST_TMP/w1000.out" || fail "write: $(cat "$TEST_TMP/w1000.out")"
[ "$(field "$TEST_TMP/w1000.send" write)" = 1000 ] && [ "$(field "$TEST_TMP/w1000.send" sends)" -ge 1049 ] ||
	fail "write: not 1000 bytes a send: $(cat "$TEST_TMP/w1000.send")"

# One byte flipped in 4 MiB: the receiver finds it and fails.
serve flip recv
"$TCPPERF" send --dest 127.0.0.1 --port "$PORT" --mib 4 --flip 3000001 >/dev/null ||
	fail "flip: tcpperf send failed"
if wait "$SRV_PID"; then fail "flip: tcpperf recv passed a wrong byte: $(cat "$TEST_TMP/flip.out")"; fi
[ "$(field "$TEST_TMP/flip.out" bad)" = 1 ] && [ "$(field "$TEST_TMP/flip.out" first_bad)" = 3000001 ] ||
	fail "flip: $(cat "$TEST_TMP/flip.out")"

# Short by a MiB: the length check fails it.
serve short recv --mib 3
"$TCPPERF" send --dest 127.0.0.1 --port "$PORT" --mib 2 >/dev/null || fail "short: tcpperf send failed"
if wait "$SRV_PID"; then fail "short: tcpperf recv passed a short stream: $(cat "$TEST_TMP/short.out")"; fi
grep -q ' bytes=2097152 .* bad=0 .*ok=0$' "$TEST_TMP/short.out" || fail "short: $(cat "$TEST_TMP/short.out")"

# Request/response: both sides count the same transactions, percentiles in order.
serve rrsrv rr-server --size 300
"$TCPPERF" rr --dest 127.0.0.1 --port "$PORT" --size 300 --secs 1 >"$TEST_TMP/rr.out" ||
	fail "rr: tcpperf rr failed: $(cat "$TEST_TMP/rr.out")"
wait "$SRV_PID" || fail "rr: tcpperf rr-server failed: $(cat "$TEST_TMP/rrsrv.out" "$TEST_TMP/rrsrv.err")"
trans=$(field "$TEST_TMP/rr.out" trans)
[ "${trans:-0}" -gt 0 ] && [ "$(field "$TEST_TMP/rr.out" bad)" = 0 ] || fail "rr: $(cat "$TEST_TMP/rr.out")"
grep -q "^tcpperf: mode=rr-server size=300 trans=$trans ok=1$" "$TEST_TMP/rrsrv.out" ||
	fail "rr: the server saw otherwise: $(cat "$TEST_TMP/rrsrv.out") vs $(cat "$TEST_TMP/rr.out")"
awk -v a="$(field "$TEST_TMP/rr.out" lat_us_p50)" -v b="$(field "$TEST_TMP/rr.out" p90)" \
	-v c="$(field "$TEST_TMP/rr.out" p99)" 'BEGIN { exit !(a > 0 && a <= b && b <= c) }' ||
	fail "rr: percentiles out of order: $(cat "$TEST_TMP/rr.out")"

# An echo with one byte wrong (in the 3rd request): the client stops there and fails.
# (The client's output has a file of its own: rrbad.out is the server's.)
serve rrbad rr-server --size 300 --flip 650
if "$TCPPERF" rr --dest 127.0.0.1 --port "$PORT" --size 300 --secs 5 >"$TEST_TMP/rrbad.client" 2>&1; then
	fail "rrbad: tcpperf rr took a wrong echo: $(cat "$TEST_TMP/rrbad.client")"
fi
grep -q '^tcpperf: mode=rr size=300 trans=2 .* bad=1 ok=0$' "$TEST_TMP/rrbad.client" ||
	fail "rrbad: $(cat "$TEST_TMP/rrbad.client")"
wait "$SRV_PID" || true

# Connect/request/response (crr): a connection per transaction, the client closing first;
# both ends count the same transactions, the server every one closed cleanly.
serve crrsrv crr-server --size 100 --idle-ms 1000
"$TCPPERF" crr --dest 127.0.0.1 --port "$PORT" --size 100 --secs 1 >"$TEST_TMP/crr.out" ||
	fail "crr: tcpperf crr failed: $(cat "$TEST_TMP/crr.out")"
wait "$SRV_PID" || fail "crr: tcpperf crr-server failed: $(cat "$TEST_TMP/crrsrv.out" "$TEST_TMP/crrsrv.err")"
trans=$(field "$TEST_TMP/crr.out" trans)
[ "${trans:-0}" -gt 1 ] && [ "$(field "$TEST_TMP/crr.out" bad)" = 0 ] || fail "crr: $(cat "$TEST_TMP/crr.out")"
grep -q "^tcpperf: mode=crr-server size=100 conns=$trans trans=$trans resets=0 errors=0 ok=1$" \
	"$TEST_TMP/crrsrv.out" || fail "crr: the server saw otherwise: $(cat "$TEST_TMP/crrsrv.out") vs $(cat "$TEST_TMP/crr.out")"
# A client that resets its connection instead of closing it: the server says so, and fails.
if command -v python3 >/dev/null; then
	serve crrrst crr-server --size 10 --idle-ms 500
	python3 - "$PORT" <<'PY' || fail "crr reset: the python client failed"
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"0123456789")
got = b""
while len(got) < 10:
    got += s.recv(10 - len(got))
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()  # a RST, not a FIN
PY
	if wait "$SRV_PID"; then fail "crr reset: the server passed a reset: $(cat "$TEST_TMP/crrrst.out")"; fi
	grep -q '^tcpperf: mode=crr-server size=10 conns=1 trans=1 resets=1 errors=0 ok=0$' "$TEST_TMP/crrrst.out" ||
		fail "crr reset: $(cat "$TEST_TMP/crrrst.out")"
fi

# A bad command line is a usage error.
"$TCPPERF" bogus 2>/dev/null
[ $? = 2 ] || fail "an unknown mode is not a usage error"
exit 0
