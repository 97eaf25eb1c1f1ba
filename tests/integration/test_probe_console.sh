#!/usr/bin/env bash
# virtio-console end to end: the probe (test=console) writes 1 MiB of its pattern through a
# named port (found by the MULTIPORT handshake) on each transport, and the port's host file must
# be exactly the pattern (console_pattern.py makes it here); its CRC-32 the probe's too. Then
# hvc0 without named ports (no MULTIPORT offered): the pattern follows the probe's serial lines
# in the shared output, and a bad option fails the probe cleanly.
source "$(dirname "$0")/lib.sh"
need_kvm
command -v python3 >/dev/null || skip "no python3 to make the expected pattern"

PATTERN=$ROOT/tests/integration/console_pattern.py
BYTES=1048576
"$PATTERN" $BYTES 1 >"$TEST_TMP/want.bin"
WANT_CRC=$("$PATTERN" --crc32 $BYTES 1)

for t in mmio pci; do
	name=console-$t
	run_vmm "$name" 60 --kernel "$FW/probe.elf" --memory 256M \
		--console "virtio,transport=$t" --vport "probe.data:file=$TEST_TMP/$name.data" \
		--cmdline "test=console console.seed=1"
	expect_probe_pass "$name"
	expect_line "$name" out "^probe: console devices=1 transport=$t multiport=1 max_nr_ports=2\$"
	expect_line "$name" out '^probe: console port=1 name=probe.data$'
	expect_line "$name" out "^probe: console bytes=$BYTES crc32=$WANT_CRC "
	cmp "$TEST_TMP/want.bin" "$TEST_TMP/$name.data" ||
		fail "$name: the port's file is not the probe's pattern"
done

# Without named ports the device offers no MULTIPORT: the stream goes to hvc0, whose output
# COM1 shares (a file: the probe's lines, then the stream, then PASS after it).
name=console-hvc0
run_vmm "$name" 60 --kernel "$FW/probe.elf" --console "virtio,file=$TEST_TMP/$name.log" \
	--cmdline "test=console console.port=hvc0 console.bytes=100000 console.seed=7"
expect_status "$name" 0
grep -aq "^probe: console devices=1 transport=.* multiport=0 max_nr_ports=1" "$TEST_TMP/$name.log" ||
	fail "$name: no single-port device line"
grep -aq "^probe: console bytes=100000 crc32=$("$PATTERN" --crc32 100000 7) " "$TEST_TMP/$name.log" ||
	fail "$name: wrong CRC-32"
"$PATTERN" 100000 7 >"$TEST_TMP/want7.bin"
# hvc0's bytes reach the file through minivmm's output queue, COM1's directly: the probe's
# lines after the stream may land inside its tail, so they are taken out before comparing.
python3 - "$TEST_TMP/$name.log" "$TEST_TMP/want7.bin" <<'PY' || fail "$name: hvc0's output is not the pattern"
import re, sys
log, want = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
m = re.search(rb"probe: console port=0 name=hvc0\r?\n", log)
rest = re.sub(rb"probe: [ -~]*\r?\n", b"", log[m.end():]) if m else b""
sys.exit(0 if rest[: len(want)] == want else 1)
PY

# A named port the device does not have: the probe fails with a clear reason.
name=console-noport
run_vmm "$name" 60 --kernel "$FW/probe.elf" --console virtio \
	--vport "other:file=$TEST_TMP/other.data" --cmdline "test=console console.bytes=4096"
expect_status "$name" 1
expect_line "$name" out '^probe: console port 1 added=1 name=other host_open=1$'
expect_line "$name" out '^probe: FAIL'
exit 0
