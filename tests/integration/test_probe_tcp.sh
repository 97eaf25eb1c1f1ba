#!/usr/bin/env bash
# The probe's own TCP (firmware/net/tcp.c) against Linux's, through the user-mode backend on
# each transport:
# - test=tcp_stream sends 16 MiB of a known pattern to a listener on the host's loopback
#   (reached as 10.0.2.2 with host-loopback=on), which checks every byte and that the stream
#   closes cleanly;
# - test=tcp_sink listens in the guest, reached through a hostfwd rule: `tcpperf send` sends it
#   16 MiB of the pattern, and the guest checks every byte (one flipped byte is found);
# - test=tcp_rr connects to `tcpperf rr-server` on the host (10.0.2.2, host-loopback=on) and
#   does request/response; both ends count the same transactions;
# - the user-mode backend offers no offloads, so the probe sends MSS frames (offload=off,
#   tso_frames=0) even with net.offload on, and a net.offload that is not on/off fails it.
source "$(dirname "$0")/lib.sh"
need_kvm
command -v python3 >/dev/null || skip "python3 is not installed"
command -v cc >/dev/null || skip "no C compiler"

TCPPERF=$TEST_TMP/tcpperf
cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$TCPPERF" "$ROOT/examples/netbench/tcpperf.c" ||
	fail "cannot build tcpperf"

# free_port: a TCP port on 127.0.0.1 nothing listens on now (for a hostfwd rule).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

MIB=16
RR_SIZE=256
for transport in pci mmio; do
	name=tcp-$transport
	sink=$TEST_TMP/$name-sink.out
	python3 "$ROOT/tests/integration/tcp_sink.py" $((MIB << 20)) >"$sink" 2>&1 &
	sink_pid=$!
	on_exit "kill $sink_pid 2>/dev/null"
	wait_line "$name-sink" out '^port [0-9]+$' 100
	port=$(sed -n 's/^port //p' "$sink")
	run_vmm "$name" 120 --kernel "$FW/probe.elf" --memory 256M \
		--net "user,transport=$transport,host-loopback=on" \
		--cmdline "test=tcp_stream net.ip=10.0.2.15/24 net.peer=10.0.2.2 net.peer_port=$port net.tcp_mib=$MIB"
	expect_probe_pass "$name"
	# Seconds to the millisecond: a short transfer must not read as 0.0 (netbench divides by it).
	expect_line "$name" out "^probe: tcp_stream bytes=$((MIB << 20)) secs=[0-9]+\.[0-9]{3} "
	# the user-mode backend takes no offloaded frame: nothing offered, MSS frames (net.offload
	# is on by default), as README says; the tap case is the nested probe_tcp scenario's
	expect_line "$name" out '^probe: net .* offload=off '
	expect_line "$name" out '^probe: tcp_stream .* tso_frames=0[^0-9]*$'
	wait "$sink_pid" || { cat "$sink" >&2; fail "$name: the listener's check failed"; }
	grep -q "^tcp_sink bytes=$((MIB << 20)) bad=0$" "$sink" || { cat "$sink" >&2; fail "$name: $(tail -n1 "$sink")"; }

	# Host to guest: the guest listens on 9000, the host's 127.0.0.1:hport is forwarded to it.
	name=tcpsink-$transport
	hport=$(free_port)
	run_vmm_bg "$name" --kernel "$FW/probe.elf" --memory 256M \
		--net "user,transport=$transport,hostfwd=tcp:127.0.0.1:$hport-:9000" \
		--cmdline "test=tcp_sink net.ip=10.0.2.15/24 net.peer=10.0.2.2 net.port=9000 net.tcp_mib=$MIB net.wait=60"
	wait_line "$name" out '^probe: tcp_sink listening port=9000' 300
	"$TCPPERF" send --dest 127.0.0.1 --port "$hport" --mib "$MIB" >"$TEST_TMP/$name.send" 2>&1 ||
		{ cat "$TEST_TMP/$name.send" >&2; show "$name"; fail "$name: tcpperf send failed"; }
	wait_vmm "$name" 120
	VMM_PID= # gone: wait_line below must not take that for this name's end
	expect_probe_pass "$name"
	expect_line "$name" out "^probe: tcp_sink bytes=$((MIB << 20)) secs=[0-9]+\.[0-9]{3} mbps=[0-9.]+ bad=0 "

	# Request/response: the guest connects to the host's rr-server.
	name=tcprr-$transport
	"$TCPPERF" rr-server --port 0 --size $RR_SIZE --ready-file "$TEST_TMP/$name.port" \
		>"$TEST_TMP/$name.srv" 2>&1 &
	srv_pid=$!
	on_exit "kill $srv_pid 2>/dev/null"
	wait_line "$name" port '^[0-9]+$' 100
	port=$(cat "$TEST_TMP/$name.port")
	run_vmm "$name" 120 --kernel "$FW/probe.elf" --memory 256M \
		--net "user,transport=$transport,host-loopback=on" \
		--cmdline "test=tcp_rr net.ip=10.0.2.15/24 net.peer=10.0.2.2 net.peer_port=$port net.size=$RR_SIZE net.secs=1"
	expect_probe_pass "$name"
	expect_line "$name" out "^probe: tcp_rr size=$RR_SIZE trans=[1-9][0-9]* .* bad=0 "
	wait "$srv_pid" || { cat "$TEST_TMP/$name.srv" >&2; fail "$name: tcpperf rr-server failed"; }
	trans=$(sed -n 's/^probe: tcp_rr size=[0-9]* trans=\([0-9]*\) .*/\1/p' "$TEST_TMP/$name.out")
	grep -q "^tcpperf: mode=rr-server size=$RR_SIZE trans=$trans ok=1$" "$TEST_TMP/$name.srv" ||
		fail "$name: the guest counted $trans transactions, the server: $(cat "$TEST_TMP/$name.srv")"
done

# One byte wrong in the stream (past the first 2^17-byte period of the guest's pattern table,
# inside an 8-byte word): the guest finds exactly it, and fails.
name=tcpsink-bad
hport=$(free_port)
run_vmm_bg "$name" --kernel "$FW/probe.elf" --memory 256M \
	--net "user,hostfwd=tcp:127.0.0.1:$hport-:9000" \
	--cmdline "test=tcp_sink net.ip=10.0.2.15/24 net.peer=10.0.2.2 net.port=9000 net.tcp_mib=4 net.wait=60"
wait_line "$name" out '^probe: tcp_sink listening port=9000' 300
"$TCPPERF" send --dest 127.0.0.1 --port "$hport" --mib 4 --flip 3000001 >"$TEST_TMP/$name.send" 2>&1 ||
	{ cat "$TEST_TMP/$name.send" >&2; show "$name"; fail "$name: tcpperf send failed"; }
wait_vmm "$name" 120
VMM_PID=
[ "$VMM_STATUS" != 0 ] || fail "$name: the probe passed a wrong byte"
expect_line "$name" out '^probe: tcp_sink bytes=4194304 .* bad=1 first_bad=3000001 '
expect_line "$name" out '^probe: FAIL tcp_sink: wrong bytes'

# net.offload takes on or off only: anything else fails the probe, saying so.
run_vmm offload-bad 60 --kernel "$FW/probe.elf" --memory 64M --net user \
	--cmdline "test=tcp_stream net.ip=10.0.2.15/24 net.peer=10.0.2.2 net.peer_port=9 net.offload=yes"
expect_line offload-bad out '^probe: FAIL .*net.offload: on or off'
exit 0
