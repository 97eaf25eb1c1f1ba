#!/usr/bin/env bash
# The probe's virtio-console driver (test=console) against the reference device: QEMU's
# virtio-serial (virtio-serial-device on microvm, virtio-mmio; virtio-serial-pci on pc) with one
# named port, virtserialport name=probe.data, on a file. Runs under TCG (and KVM where it
# opens), so it proves the driver's MULTIPORT handshake on any host; test_probe_console.sh runs
# the same under minivmm. The port's file must be exactly the pattern (console_pattern.py);
# console.port=com1 puts it on the serial console instead.
# shellcheck disable=SC2054 # QEMU options take commas
source "$(dirname "$0")/lib.sh"
runs_no_vmm
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
command -v python3 >/dev/null || skip "no python3 to make the expected pattern"

accel=tcg
kvm_usable && accel=kvm
PATTERN=$ROOT/tests/integration/console_pattern.py
BYTES=262144
"$PATTERN" $BYTES 3 >"$TEST_TMP/want.bin"
WANT_CRC=$("$PATTERN" --crc32 $BYTES 3)

# qemu_console NAME TRANSPORT PORTNAME ARGS...: one probe run with test=console and ARGS, the
# port PORTNAME on $TEST_TMP/NAME.data; QEMU's exit status in STATUS (isa-debug-exit: PASS is
# 1, FAIL 3).
qemu_console() {
	local name=$1 t=$2 port=$3 machine
	shift 3
	if [ "$t" = mmio ]; then
		machine=(-M microvm,acpi=off -global virtio-mmio.force-legacy=false
			-device virtio-serial-device)
	else
		machine=(-M pc -device virtio-serial-pci)
	fi
	STATUS=0
	timeout --signal=KILL 120 qemu-system-x86_64 -accel "$accel" "${machine[@]}" -m 256M \
		-chardev "file,id=p1,path=$TEST_TMP/$name.data" \
		-device "virtserialport,chardev=p1,name=$port" -nographic -no-reboot \
		-kernel "$FW/probe.elf" -device isa-debug-exit,iobase=0xf4 \
		-append "test=console $*" </dev/null >"$TEST_TMP/$name.out" \
		2>"$TEST_TMP/$name.err" || STATUS=$?
}

for t in mmio pci; do
	name=qemu-$t
	qemu_console "$name" "$t" probe.data console.bytes=$BYTES console.seed=3
	[ "$STATUS" = 1 ] || { show "$name"; fail "$name: QEMU exit status $STATUS, expected 1 (PASS)"; }
	expect_line "$name" out '^probe: PASS'
	expect_line "$name" out "^probe: console devices=1 transport=$t multiport=1 "
	expect_line "$name" out '^probe: console port=1 name=probe.data'
	expect_line "$name" out "^probe: console bytes=$BYTES crc32=$WANT_CRC "
	cmp "$TEST_TMP/want.bin" "$TEST_TMP/$name.data" ||
		fail "$name: the port's file is not the probe's pattern"
done

# Small buffers one at a time, and a port the probe is not told of: it fails, naming the ports.
name=qemu-one
qemu_console "$name" pci probe.data console.bytes=$BYTES console.seed=3 console.chunk=1000 console.depth=1
[ "$STATUS" = 1 ] || { show "$name"; fail "$name: QEMU exit status $STATUS, expected 1 (PASS)"; }
cmp "$TEST_TMP/want.bin" "$TEST_TMP/$name.data" || fail "$name: the port's file is not the pattern"
name=qemu-noport
qemu_console "$name" mmio other console.bytes=4096
[ "$STATUS" = 3 ] || { show "$name"; fail "$name: QEMU exit status $STATUS, expected 3 (FAIL)"; }
expect_line "$name" out '^probe: console port 1 added=1 name=other host_open=1$'
expect_line "$name" out '^probe: FAIL '
[ ! -s "$TEST_TMP/$name.data" ] || fail "$name: the probe wrote to a port it was not told of"

# The benchmark's baseline, the stream through COM1: the pattern on the serial console.
name=qemu-com1
qemu_console "$name" pci probe.data console.port=com1 console.bytes=100000 console.seed=7
[ "$STATUS" = 1 ] || { show "$name"; fail "$name: QEMU exit status $STATUS, expected 1 (PASS)"; }
expect_line "$name" out "^probe: console com1 bytes=100000 crc32=$("$PATTERN" --crc32 100000 7) "
"$PATTERN" 100000 7 >"$TEST_TMP/want7.bin"
python3 -c 'import sys; sys.exit(open(sys.argv[2], "rb").read() not in open(sys.argv[1], "rb").read())' \
	"$TEST_TMP/$name.out" "$TEST_TMP/want7.bin" || fail "$name: the pattern is not on COM1"
exit 0
