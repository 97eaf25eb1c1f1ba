#!/usr/bin/env bash
# virtio-rng end to end: the probe finds the devices over each transport, reads 1 MiB from
# each and checks the bytes look random (chi-square of byte frequencies, serial correlation);
# with 1 and 2 vCPUs and one or two devices.
source "$(dirname "$0")/lib.sh"
need_kvm

transports=(mmio pci)

for transport in "${transports[@]}"; do
	for cpus in 1 2; do
		for ndev in 1 2; do
			name=rng-$transport-$cpus-$ndev
			args=()
			for ((i = 0; i < ndev; i++)); do args+=("--rng,transport=$transport"); done
			run_vmm "$name" 60 --kernel "$FW/probe.elf" --cpus "$cpus" "${args[@]}" \
				--cmdline "test=rng expect.rng=$ndev"
			expect_probe_pass "$name"
			[ "$(count_lines "$name" out "^probe: rng dev=[0-9]+ transport=$transport bytes=1048576 ")" = "$ndev" ] ||
				{ show "$name"; fail "$name: expected $ndev devices to deliver 1 MiB each"; }
		done
	done
done

# Both transports in one VM, through the bzImage entry.
run_vmm rng-mixed 60 --kernel "$FW/probe.bzImage" --rng,transport=mmio --rng,transport=pci \
	--cmdline "test=rng expect.rng=2"
expect_probe_pass rng-mixed

# The I/O thread is reported and can be pinned.
run_vmm io-pin 60 --kernel "$FW/probe.elf" --rng,transport=mmio --io-pin 0 --cmdline "test=rng"
expect_probe_pass io-pin
expect_line io-pin err '^minivmm: io thread: tid [0-9]+, host cpus 0 \(pinned\)$'

# The machine description: dtc reads it back, and it lists the device with its interrupt;
# handed over as SETUP_DTB, it is where the probe takes the devices from.
run_vmm dtb 60 --kernel "$FW/probe.bzImage" --rng,transport=mmio --rng,transport=mmio \
	--dump-dtb "$TEST_TMP/machine.dtb" --dtb --cmdline "test=rng expect.rng=2"
expect_probe_pass dtb
expect_line dtb out '^probe: virtio-mmio devices from dtb: 2'
if command -v dtc >/dev/null; then
	dtc -I dtb -O dts "$TEST_TMP/machine.dtb" >"$TEST_TMP/machine.dts" 2>/dev/null ||
		fail "dtc cannot read the dumped device tree"
	grep -q 'virtio_mmio@d0001000' "$TEST_TMP/machine.dts" || fail "second device missing from the tree"
	grep -q 'interrupts = <0x06 0x01>' "$TEST_TMP/machine.dts" || fail "its interrupt is missing"
fi
exit 0
