#!/usr/bin/env bash
# virtio-net end to end on a tap in a network namespace made by this test: the host pings the
# guest; UDP echo in both directions; streams with both transmit modes, with offloads on and
# off (checked in what the guest is offered), over mmio and pci; two NICs; a tap deleted under
# a running VM; 64 MiB reliable bulk transfers each way; and the user-mode backend with a host
# port forward. No corrupted datagram is accepted on either side, and every VMM exits with the
# status expected of it.
source "$(dirname "$0")/lib.sh"
need_kvm
source "$(dirname "$0")/netns.sh"
netns_require

UDPPERF=$TEST_TMP/udpperf
cc -std=gnu11 -O2 -o "$UDPPERF" "$ROOT/examples/netbench/udpperf.c" || fail "cannot build udpperf"
NS=mvn$$
netns_create "$NS"
netns_tap "$NS" mvt0 10.0.2.1/24
netns_tap "$NS" mvt1 10.0.3.1/24
PROBE_NET="net.ip=10.0.2.15/24 net.peer=10.0.2.1"

# start_vmm NAME ARGS...: minivmm in the namespace, in the background (run_vmm_bg; ip netns
# exec execs the VMM, so VMM_PID is the VMM itself).
start_vmm() {
	local name=$1
	shift
	local VMM_WRAPPER=(ip netns exec "$NS")
	run_vmm_bg "$name" --kernel "$FW/probe.elf" "$@"
}

# stop_vmm NAME: SIGTERM ends the VMM with 128 + 15; anything else (it died before) fails.
stop_vmm() {
	kill -TERM "$VMM_PID" 2>/dev/null
	VMM_STATUS=0
	wait "$VMM_PID" 2>/dev/null || VMM_STATUS=$?
	expect_status "$1" 143
}

# finish_vmm NAME: a background VMM whose guest ends by itself; its status must be the PASS one.
finish_vmm() {
	wait_vmm "$1" 120
	expect_status "$1" 0
}

# offered_bit NAME BIT: whether the device offered feature BIT, as the probe reported it.
offered_bit() {
	local offered
	offered=$(grep -Eo ' offered=0x[0-9a-f]+ ' "$TEST_TMP/$1.out" | head -n 1 | tr -d ' ')
	[ -n "$offered" ] || { show "$1"; fail "$1: the probe did not report the offered features"; }
	echo $(((${offered#offered=} >> $2) & 1))
}

csum_errors() {
	netns_exec "$NS" awk '/^Udp:/ && ++n == 2 {print $7}' /proc/net/snmp
}

for transport in mmio pci; do
	name=serve-$transport
	start_vmm "$name" --net "tap=mvt0,transport=$transport" --cmdline "test=serve $PROBE_NET"
	wait_line "$name" out '^probe: serve ready'
	netns_exec "$NS" ping -c 3 -i 0.2 -W 2 10.0.2.15 >"$TEST_TMP/$name.ping" ||
		{ cat "$TEST_TMP/$name.ping"; fail "$name: the host cannot ping the guest"; }
	# Host to guest and back: the guest echoes every datagram.
	netns_exec "$NS" "$UDPPERF" rr --dest 10.0.2.15 --port 9000 --size 200 --secs 1 \
		>"$TEST_TMP/$name.rr" || fail "$name: udpperf rr failed"
	grep -Eq 'trans=[1-9][0-9]* ' "$TEST_TMP/$name.rr" ||
		{ cat "$TEST_TMP/$name.rr"; fail "$name: no UDP echo from the guest"; }
	# Above the MTU: three fragments each way, reassembled by the guest, then by the host.
	netns_exec "$NS" "$UDPPERF" rr --dest 10.0.2.15 --port 9000 --size 4000 --secs 1 \
		>"$TEST_TMP/$name.rr4k" || fail "$name: udpperf rr --size 4000 failed"
	grep -Eq 'trans=[1-9][0-9]* .* bad=0' "$TEST_TMP/$name.rr4k" ||
		{ cat "$TEST_TMP/$name.rr4k"; fail "$name: no echo of fragmented datagrams"; }
	stop_vmm "$name"
done

# Guest to host and back: the guest's udp_rr against the host's echo server.
ip netns exec "$NS" "$UDPPERF" echo --port 9000 --wait-secs 20 --idle-ms 3000 >/dev/null &
on_exit "kill $! 2>/dev/null"
run_vmm_ns() {
	local name=$1 limit=$2
	shift 2
	VMM_STATUS=0
	netns_exec "$NS" timeout --signal=KILL "$limit" "$MINIVMM" --kernel "$FW/probe.elf" "$@" \
		</dev/null >"$TEST_TMP/$name.out" 2>"$TEST_TMP/$name.err" || VMM_STATUS=$?
}
run_vmm_ns rr 60 --net tap=mvt0,transport=mmio \
	--cmdline "test=udp_rr net.size=256 net.secs=1 $PROBE_NET"
expect_probe_pass rr
expect_line rr out '^probe: udp_rr size=256 trans=[1-9][0-9]* '
wait

# Streams guest to host, with each transmit mode and offloads on and off.
before=$(csum_errors)
for opts in tx=bh tx=timer tx=bh,offload=off tx=bh,tx-burst=8 tx=timer,tx-timer=50; do
	name=stream-${opts//[,=]/-}
	ip netns exec "$NS" "$UDPPERF" sink --port 9000 --buf 8388608 --wait-secs 20 \
		--idle-ms 2000 >"$TEST_TMP/$name.sink" &
	sink=$!
	run_vmm_ns "$name" 60 --net "tap=mvt0,transport=pci,$opts" \
		--cmdline "test=udp_stream net.sizes=64,1472,8000 net.secs=1 $PROBE_NET"
	wait $sink
	expect_probe_pass "$name"
	for size in 64 1472 8000; do
		expect_line "$name" out "^probe: udp_stream size=$size secs=[0-9.]+ msgs=[1-9]"
	done
	grep -Eq 'msgs=[1-9][0-9]* ' "$TEST_TMP/$name.sink" ||
		{ cat "$TEST_TMP/$name.sink"; fail "$name: the host received nothing"; }
	expect_line "$name" err "${opts%%,*} "
	# What the guest sees: VIRTIO_NET_F_CSUM (0) and GUEST_CSUM (1) offered or not.
	case $opts in
	*offload=off*) want=0 ;;
	*) want=1 ;;
	esac
	for bit in 0 1; do
		[ "$(offered_bit "$name" $bit)" = $want ] ||
			{ show "$name"; fail "$name: feature bit $bit offered is not $want"; }
	done
done
[ "$(csum_errors)" = "$before" ] || fail "the host saw UDP checksum errors"

# The guest waits for transmit room on interrupts (irqfd: IOAPIC pin for mmio, MSI-X for pci).
for transport in mmio pci; do
	name=stream-halt-$transport
	ip netns exec "$NS" "$UDPPERF" sink --port 9000 --buf 8388608 --wait-secs 20 \
		--idle-ms 2000 >"$TEST_TMP/$name.sink" &
	sink=$!
	run_vmm_ns "$name" 60 --net "tap=mvt0,transport=$transport" \
		--cmdline "test=udp_stream net.sizes=1472 net.secs=1 net.txwait=halt $PROBE_NET"
	wait $sink
	expect_probe_pass "$name"
	expect_line "$name" out '^probe: udp_stream size=1472 secs=[0-9.]+ msgs=[1-9]'
	expect_line "$name" err 'virtio-net0: kicks [0-9]+ .*interrupts [1-9][0-9]'
done

# Host to guest stream: the guest counts what arrives; it accepts no bad checksum.
name=sink
start_vmm "$name" --net tap=mvt0,transport=mmio \
	--cmdline "test=udp_sink net.secs=1 $PROBE_NET"
wait_line "$name" out '^probe: net transport='
netns_exec "$NS" "$UDPPERF" send --dest 10.0.2.15 --port 9000 --size 1000 --secs 3 >/dev/null
finish_vmm "$name"
expect_line "$name" out '^probe: udp_sink msgs=[1-9]'
expect_line "$name" out '^probe: PASS'
expect_line "$name" out 'rx_bad=0 '

# Two NICs; then the tap the guest uses disappears under the running VM: the VMM says so once,
# and keeps running (its control socket still answers).
name=two-nics
start_vmm "$name" --net tap=mvt0,transport=mmio --net tap=mvt1,transport=pci \
	--api-sock "$TEST_TMP/api.sock" --cmdline "test=serve $PROBE_NET"
wait_line "$name" out '^probe: serve ready'
expect_line "$name" err 'virtio-net0: tap backend mvt0'
expect_line "$name" err 'virtio-net1: tap backend mvt1'
netns_exec "$NS" ping -c 2 -i 0.2 -W 2 10.0.2.15 >/dev/null || fail "$name: no ping"
netns_exec "$NS" ip link del mvt0
for _ in $(seq 100); do
	grep -q 'virtio-net0: backend lost' "$TEST_TMP/$name.err" && break
	sleep 0.1
done
expect_line "$name" err 'virtio-net0: backend lost: .*deleted'
"$MINIVMM" ctl --sock "$TEST_TMP/api.sock" status >"$TEST_TMP/$name.status" ||
	fail "$name: the VMM stopped answering after its tap went away"
grep -q '"label":"virtio-net1"' "$TEST_TMP/$name.status" || fail "$name: second NIC missing"
stop_vmm "$name"
[ "$(grep -c 'backend lost' "$TEST_TMP/$name.err")" = 1 ] || fail "$name: reported more than once"

# Reliable bulk transfers (go-back-N over UDP, firmware/tests/test_net_bulk.c), 64 MiB each way:
# every datagram's content is checked on arrival and both ends agree on the CRC-32.
# mvt0 is gone (above): on mvt1.
BULK_NET="net.ip=10.0.3.15/24 net.peer=10.0.3.1"
bulk_crc() {
	grep -Eo 'crc32=[0-9a-f]{8}' "$1" | tail -n 1
}
# Guest to host over mmio.
name=bulk-send
ip netns exec "$NS" "$UDPPERF" bulk-recv --port 9000 --wait-secs 30 \
	>"$TEST_TMP/$name.host" 2>&1 &
recv=$!
run_vmm_ns "$name" 90 --net tap=mvt1,transport=mmio --cmdline "test=bulk_send $BULK_NET"
wait $recv || { cat "$TEST_TMP/$name.host"; show "$name"; fail "$name: udpperf bulk-recv failed"; }
expect_probe_pass "$name"
expect_line "$name" out '^probe: bulk_send mib=64 datagrams=65536 retransmits=[0-9]+ .*crc32='
grep -Eq 'mode=bulk-recv mib=64 datagrams=65536 .*corrupt=0 ok=1' "$TEST_TMP/$name.host" ||
	{ cat "$TEST_TMP/$name.host"; fail "$name: the host did not receive it all intact"; }
[ "$(bulk_crc "$TEST_TMP/$name.out")" = "$(bulk_crc "$TEST_TMP/$name.host")" ] ||
	fail "$name: the CRC-32s differ"
# Host to guest over pci.
name=bulk-recv
start_vmm "$name" --net tap=mvt1,transport=pci \
	--cmdline "test=bulk_recv $BULK_NET"
wait_line "$name" out '^probe: bulk_recv ready'
netns_exec "$NS" "$UDPPERF" bulk-send --dest 10.0.3.15 --port 9000 >"$TEST_TMP/$name.host" ||
	{ cat "$TEST_TMP/$name.host"; show "$name"; fail "$name: udpperf bulk-send failed"; }
finish_vmm "$name"
expect_line "$name" out '^probe: bulk_recv mib=64 datagrams=65536 .*corrupt=0 .*crc32=[0-9a-f]{8} ok$'
expect_line "$name" out '^probe: PASS'
expect_line "$name" out 'rx_bad=0 '
grep -Eq 'mode=bulk-send mib=64 datagrams=65536 .*ok=1' "$TEST_TMP/$name.host" ||
	{ cat "$TEST_TMP/$name.host"; fail "$name: the transfer did not complete"; }
[ "$(bulk_crc "$TEST_TMP/$name.out")" = "$(bulk_crc "$TEST_TMP/$name.host")" ] ||
	fail "$name: the CRC-32s differ"

# User-mode networking: no privileges, a UDP port forward from the host to the guest.
port=$((20000 + $$ % 20000))
start_vmm user --net "user,hostfwd=udp::$port-:9000,transport=mmio" \
	--cmdline "test=serve net.ip=10.0.2.15/24 net.peer=10.0.2.2"
wait_line user out '^probe: serve ready'
netns_exec "$NS" "$UDPPERF" rr --dest 127.0.0.1 --port "$port" --size 100 --secs 1 \
	>"$TEST_TMP/user.rr" || fail "user: udpperf rr failed"
grep -Eq 'trans=[1-9][0-9]* ' "$TEST_TMP/user.rr" ||
	{ cat "$TEST_TMP/user.rr"; show user; fail "user: no echo through the port forward"; }
stop_vmm user
exit 0
