#!/usr/bin/env bash
# A guest that lies: malformed descriptor chains (a loop, an address past RAM, an overflowing
# length) on one device mark that device DEVICE_NEEDS_RESET, while a second device keeps
# working, the first works again after a reset, and the VMM stays alive throughout. Then a
# driver that breaks the rules (test_hostile_driver.c): status bits cleared without a reset,
# ~4 GiB chains aliasing one range on rng (served 64 KiB) and balloon (refused), a queue size
# above QueueNumMax, and QueueNum rewritten from a second vCPU while the BSP enables a queue at
# the end of RAM. Afterwards, with the probe holding, the control socket answers within 1 s
# and the I/O thread is idle.
source "$(dirname "$0")/lib.sh"
need_kvm

for transport in mmio pci; do
	name=hostile-$transport
	sock=$TEST_TMP/$name.sock
	run_vmm_bg --fifo "$name" --kernel "$FW/probe.elf" --cpus 2 --rng,transport=$transport \
		--rng,transport=$transport --balloon,transport=$transport --api-sock "$sock" \
		--cmdline "test=hostile hold=serial"
	wait_line "$name" out '^probe: holding' 600
	for c in loop past-ram overflow; do
		expect_line "$name" out "^probe: hostile case=$c needs_reset=1"
	done
	expect_line "$name" out '^probe: hostile case=status-clear status=0x4f needs_reset=1'
	expect_line "$name" out '^probe: hostile case=alias-rng described=[0-9]+ served=65536 completed=1'
	expect_line "$name" out '^probe: hostile case=alias-balloon needs_reset=1'
	expect_line "$name" out '^probe: hostile case=queue-over-max size=1024 max=256 needs_reset=1'
	expect_line "$name" out '^probe: hostile case=queue-race rounds=400 '
	expect_line "$name" out '^probe: hostile ok'

	# Still responsive: the control socket answers within 1 s, and nothing keeps the I/O
	# thread busy once the guest is quiet (1 s of wall time, at most 0.1 s of its CPU).
	timeout 1 "$MINIVMM" ctl --sock "$sock" status >"$TEST_TMP/$name.status" ||
		fail "$name: the control socket did not answer within 1 s"
	grep -q '"ok":true' "$TEST_TMP/$name.status" || fail "$name: $(cat "$TEST_TMP/$name.status")"
	iotid=$(io_tid "$name")
	[ -n "$iotid" ] || fail "$name: no I/O thread id in the log"
	hz=$(getconf CLK_TCK)
	t0=$(thread_ticks $VMM_PID "$iotid")
	sleep 1 # the measurement window, not a wait for something to happen
	t1=$(thread_ticks $VMM_PID "$iotid")
	[ $((t1 - t0)) -le $((hz / 10)) ] ||
		fail "$name: the idle I/O thread used $((t1 - t0)) of $hz ticks in 1 s"

	echo >&3 # release the probe
	exec 3>&-
	wait_vmm "$name" 30
	expect_probe_pass "$name"
	# minivmm says what the guest did wrong, naming the device.
	expect_line "$name" err 'virtio-rng0: guest driver error: .*(loop|exceeds)'
	expect_line "$name" err 'virtio-rng0: guest driver error: .*outside guest RAM'
	expect_line "$name" err 'virtio-rng0: guest driver error: driver cleared status bits'
	expect_line "$name" err 'virtio-balloon0: guest driver error: balloon PFN buffer holds more'
	expect_line "$name" err 'virtio-rng0: guest driver error: queue 0: size 1024 is not a power'
	# The race breaks the device hundreds of times in a second: the log stays readable.
	n=$(count_lines "$name" err 'virtio-rng0: guest driver error')
	[ "$n" -le 10 ] || fail "$name: $n guest-error lines for one device in seconds (rate limit)"
	if grep -q 'virtio-rng1: guest driver error' "$TEST_TMP/$name.err"; then
		fail "$name: the second device was marked broken"
	fi
done
exit 0
