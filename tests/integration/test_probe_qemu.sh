#!/usr/bin/env bash
# The probe is a guest for any VMM: it boots under QEMU's microvm too, natively on this
# machine's KVM (PVM opt-in) and in plain ring 0 under TCG (the path hardware KVM takes), with
# RAM above 4 GiB that it maps and checks.
source "$(dirname "$0")/lib.sh"
runs_no_vmm
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"

# Without a usable /dev/kvm only the TCG half runs (and says so).
accels="kvm tcg"
kvm_usable || { accels=tcg; echo "note: no usable /dev/kvm: the -accel kvm boot is skipped"; }
for accel in $accels; do
	name=qemu-$accel
	status=0
	timeout --signal=KILL 120 qemu-system-x86_64 -accel "$accel" -M microvm -m 5G -smp 2 \
		-nographic -no-reboot -kernel "$FW/probe.elf" -device isa-debug-exit,iobase=0xf4 \
		-append "test=boot expect.mem=5G expect.cpus=2" </dev/null >"$TEST_TMP/$name.out" \
		2>"$TEST_TMP/$name.err" || status=$?
	# isa-debug-exit turns the probe's 0 (PASS) into (0 << 1) | 1.
	[ "$status" = 1 ] || { show "$name"; fail "$name: QEMU exit status $status, expected 1"; }
	expect_line "$name" out '^probe: PASS'
	expect_line "$name" out '^probe: cpus=2 online=2$'
	expect_line "$name" out '^probe: ram range addr=0x100000000 size=0x80000000 words=16$'
	expect_line "$name" out '^probe: ram ok ranges=3 words=[0-9]+ above_4g=16$'
done
expect_line qemu-tcg out '^probe: mode=emulated '
exit 0
