#!/usr/bin/env bash
# A guest that lies: malformed descriptor chains (a loop, an address past RAM, an overflowing
# length) on one device mark that device DEVICE_NEEDS_RESET, while a second device keeps
# working, the first works again after a reset, and the VMM stays alive throughout.
source "$(dirname "$0")/lib.sh"

for transport in mmio pci; do
	name=hostile-$transport
	run_vmm "$name" 60 --kernel "$FW/probe.elf" --cpus 2 --rng,transport=$transport \
		--rng,transport=$transport --cmdline "test=hostile"
	expect_probe_pass "$name"
	for c in loop past-ram overflow; do
		expect_line "$name" out "^probe: hostile case=$c needs_reset=1"
	done
	expect_line "$name" out '^probe: hostile ok'
	# minivmm says what the guest did wrong, once per violation, naming the device.
	expect_line "$name" err 'virtio-rng0: guest driver error: .*(loop|exceeds)'
	expect_line "$name" err 'virtio-rng0: guest driver error: .*outside guest RAM'
	if grep -q 'virtio-rng1: guest driver error' "$TEST_TMP/$name.err"; then
		fail "$name: the second device was marked broken"
	fi
done
exit 0
