#!/usr/bin/env bash
# Snapshot and restore of --balloon and --net devices (issue 21), each on both transports.
# Balloon: the probe follows the target (test=balloon); the balloon is inflated to 8 MiB, the VM
# saved, killed and restored: the restored device reports the saved target and released pages,
# statistics still arrive (the stats buffer the device held is returned), balloon-set 16
# inflates the restored guest's balloon and balloon-set 0 deflates it (the probe passes).
# Net: the probe serves ping and UDP echo (test=serve) on a tap in a namespace made here; saved
# after an echo, killed and restored, the guest answers again: over mmio on the same tap, over
# pci on another tap (the first one deleted), each named with --backend 0:tap=NAME (a snapshot
# names no tap); and on the user-mode backend, whose restore is a fresh libslirp stack (the port
# forward given again with --backend). Refusals: a --net without --backend, --backend for a
# device that does not exist or uses nothing on the host, an option that is not a host one.
source "$(dirname "$0")/lib.sh"
need_kvm
source "$(dirname "$0")/netns.sh"
netns_require

# One socket per VMM: a killed one's socket is removed by its helper, perhaps late.
ctl() { "$MINIVMM" ctl --sock "$sock" "$@"; }
# json_num JSON KEY: the first integer value of KEY.
json_num() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" <<<"$1"; }

# snapshot_and_kill NAME DIR: save the background VMM into DIR and kill it.
snapshot_and_kill() {
	local out
	out=$(ctl snapshot "$2") || { show "$1"; fail "$1: snapshot: $out"; }
	kill -9 "$VMM_PID"
	wait "$VMM_PID" 2>/dev/null
}

for transport in mmio pci; do
	name=balloon-$transport
	sock=$TEST_TMP/$name.sock
	run_vmm_bg "$name" --kernel "$FW/probe.elf" --memory 64M --balloon,transport=$transport \
		--api-sock "$sock" --cmdline "test=balloon balloon.touch_mib=16 balloon.timeout=120"
	wait_line "$name" out '^probe: balloon ready'
	ctl balloon-set 8 >/dev/null || fail "$name: balloon-set 8"
	wait_line "$name" out '^probe: balloon actual_pages=2048$'
	snapshot_and_kill "$name" "$TEST_TMP/snap-$name"

	sock=$TEST_TMP/r-$name.sock
	run_vmm_bg "r-$name" --restore "$TEST_TMP/snap-$name" --api-sock "$sock"
	wait_line "r-$name" err '^minivmm: restored '
	out=$(ctl status) || fail "r-$name: status: $out"
	[ "$(json_num "$out" target_pages)" = 2048 ] && [ "$(json_num "$out" actual_pages)" = 2048 ] &&
		[ "$(json_num "$out" released_pages)" = 2048 ] ||
		fail "r-$name: the balloon's saved state is not back: $out"
	updates=$(json_num "$out" stats_updates)
	# That status returned the held stats buffer: the restored guest sends fresh statistics.
	for _ in $(seq 100); do
		out=$(ctl status)
		[ "$(json_num "$out" stats_updates)" -gt "$updates" ] && break
		sleep 0.1
	done
	[ "$(json_num "$out" stats_updates)" -gt "$updates" ] ||
		fail "r-$name: no statistics after the restore: $out"
	ctl balloon-set 16 >/dev/null || fail "r-$name: balloon-set 16"
	wait_line "r-$name" out '^probe: balloon actual_pages=4096$'
	out=$(ctl status)
	[ "$(json_num "$out" released_pages)" = 4096 ] || fail "r-$name: not inflated to 16 MiB: $out"
	ctl balloon-set 0 >/dev/null || fail "r-$name: balloon-set 0"
	wait_line "r-$name" out '^probe: balloon deflated ok'
	wait_vmm "r-$name" 30
	expect_probe_pass "r-$name"
	grep -q 'minivmm probe v1' "$TEST_TMP/r-$name.out" && fail "r-$name: the guest booted again"
done

UDPPERF=$TEST_TMP/udpperf
cc -std=gnu11 -O2 -o "$UDPPERF" "$ROOT/examples/netbench/udpperf.c" || fail "cannot build udpperf"
NS=mvs$$
netns_create "$NS"
netns_tap "$NS" mvt0 10.0.2.1/24
VMM_WRAPPER=(ip netns exec "$NS")

# echoes NAME DEST PORT: the guest (or its port forward) echoes UDP datagrams.
echoes() {
	netns_exec "$NS" "$UDPPERF" rr --dest "$2" --port "$3" --size 200 --secs 1 \
		>"$TEST_TMP/$1.rr" || fail "$1: udpperf rr failed"
	grep -Eq 'trans=[1-9][0-9]* ' "$TEST_TMP/$1.rr" ||
		{ cat "$TEST_TMP/$1.rr"; show "$1"; fail "$1: no UDP echo from the guest"; }
}

for transport in mmio pci; do
	name=net-$transport
	sock=$TEST_TMP/$name.sock
	run_vmm_bg "$name" --kernel "$FW/probe.elf" --net "tap=mvt0,transport=$transport" \
		--api-sock "$sock" --cmdline "test=serve net.ip=10.0.2.15/24 net.peer=10.0.2.1"
	wait_line "$name" out '^probe: serve ready'
	echoes "$name" 10.0.2.15 9000
	snapshot_and_kill "$name" "$TEST_TMP/snap-$name"
	override=(--backend 0:tap=mvt0)
	if [ $transport = pci ]; then
		# The host changed: the tap has another name (the same address and MAC).
		mac=$(ip -n "$NS" -o link show mvt0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
		ip -n "$NS" link del mvt0 || fail "cannot delete mvt0"
		netns_tap "$NS" mvt2 10.0.2.1/24
		ip -n "$NS" link set mvt2 address "$mac" || fail "cannot set mvt2's MAC"
		override=(--backend 0:tap=mvt2)
	fi
	sock=$TEST_TMP/r-$name.sock
	run_vmm_bg "r-$name" --restore "$TEST_TMP/snap-$name" "${override[@]}" --api-sock "$sock"
	wait_line "r-$name" err '^minivmm: restored '
	netns_exec "$NS" ping -c 3 -i 0.2 -W 2 10.0.2.15 >"$TEST_TMP/r-$name.ping" ||
		{ cat "$TEST_TMP/r-$name.ping"; show "r-$name"; fail "r-$name: no ping answer after the restore"; }
	echoes "r-$name" 10.0.2.15 9000
	grep -q 'minivmm probe v1' "$TEST_TMP/r-$name.out" && fail "r-$name: the guest booted again"
	ctl shutdown >/dev/null
	wait_vmm "r-$name" 30
done

# The user-mode backend: a fresh libslirp stack, the port forward given again.
port=$((20000 + $$ % 20000))
sock=$TEST_TMP/user.sock
run_vmm_bg user --kernel "$FW/probe.elf" --net "user,hostfwd=udp::$port-:9000" \
	--api-sock "$sock" --cmdline "test=serve net.ip=10.0.2.15/24 net.peer=10.0.2.2"
wait_line user out '^probe: serve ready'
echoes user 127.0.0.1 "$port"
snapshot_and_kill user "$TEST_TMP/snap-user"
sock=$TEST_TMP/r-user.sock
grep -q "hostfwd" "$TEST_TMP/snap-user/state.bin" && fail "state.bin names the port forward"
run_vmm_bg r-user --restore "$TEST_TMP/snap-user" --backend "0:user,hostfwd=udp::$port-:9000" \
	--api-sock "$sock"
wait_line r-user err '^minivmm: restored '
echoes r-user 127.0.0.1 "$port"
ctl shutdown >/dev/null
wait_vmm r-user 30

# Bad overrides: one line, exit status 2, nothing started.
VMM_WRAPPER=()
expect_usage_error no-backend 'device 0 is a --net: give what it uses on the host with --backend 0:OPTIONS' \
	--restore "$TEST_TMP/snap-user"
expect_usage_error no-device '--backend 1: the snapshot has 1 devices' \
	--restore "$TEST_TMP/snap-user" --backend 0:user --backend 1:tap=mvt0
expect_usage_error not-net 'device 0 is a --balloon, which uses nothing on the host' \
	--restore "$TEST_TMP/snap-balloon-pci" --backend 0:tap=mvt0
expect_usage_error not-backend "'mac' is not a host option of a --net" \
	--restore "$TEST_TMP/snap-user" --backend 0:user,mac=52:54:00:12:34:56
echo "PASS"
