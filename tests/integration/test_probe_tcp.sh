#!/usr/bin/env bash
# The probe's own TCP (firmware/net/tcp.c) against Linux's, through the user-mode backend on
# each transport: test=tcp_stream sends 16 MiB of a known pattern to a listener on the host's
# loopback (reached as 10.0.2.2), which checks every byte and that the stream closes cleanly.
source "$(dirname "$0")/lib.sh"
need_kvm
command -v python3 >/dev/null || skip "python3 is not installed"

MIB=16
for transport in pci mmio; do
	name=tcp-$transport
	sink=$TEST_TMP/$name-sink.out
	python3 "$ROOT/tests/integration/tcp_sink.py" $((MIB << 20)) >"$sink" 2>&1 &
	sink_pid=$!
	on_exit "kill $sink_pid 2>/dev/null"
	wait_line "$name-sink" out '^port [0-9]+$' 100
	port=$(sed -n 's/^port //p' "$sink")
	run_vmm "$name" 120 --kernel "$FW/probe.elf" --memory 256M --net "user,transport=$transport" \
		--cmdline "test=tcp_stream net.ip=10.0.2.15/24 net.peer=10.0.2.2 net.peer_port=$port net.tcp_mib=$MIB"
	expect_probe_pass "$name"
	expect_line "$name" out "^probe: tcp_stream bytes=$((MIB << 20)) "
	wait "$sink_pid" || { cat "$sink" >&2; fail "$name: the listener's check failed"; }
	grep -q "^tcp_sink bytes=$((MIB << 20)) bad=0$" "$sink" || { cat "$sink" >&2; fail "$name: $(tail -n1 "$sink")"; }
done
exit 0
