#!/usr/bin/env bash
# The probe's virtio-fs driver (test=fs) against the reference front end: QEMU's
# vhost-user-fs-device (microvm, virtio-mmio) and vhost-user-fs-pci (pc), guest RAM from a shared
# memfd, Debian's virtiofsd serving a directory. Runs under TCG (and KVM where it opens), so it
# proves the driver on any host; test_probe_fs.sh runs the same under minivmm. A file whose size
# is no multiple of the probe's reads is read whole and summed, the root listed, a missing name
# refused with ENOENT; a wrong size, sum or file name must fail the probe.
# shellcheck disable=SC2054 # QEMU options take commas
source "$(dirname "$0")/lib.sh"
runs_no_vmm
source "$(dirname "$0")/virtiofsd.sh"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
find_virtiofsd

accel=tcg
kvm_usable && accel=kvm
SIZE=$((3 * 1048576 + 12345))
share_file "$TEST_TMP/share" data.bin "$SIZE"
echo hello >"$TEST_TMP/share/hello"

# qemu_fs NAME TRANSPORT ARGS...: one probe run with test=fs and ARGS on its command line;
# QEMU's exit status in STATUS (isa-debug-exit: PASS is 1, FAIL 3).
qemu_fs() {
	local name=$1 t=$2 machine
	shift 2
	start_virtiofsd "$name" "$TEST_TMP/share"
	wait_socket "$name"
	if [ "$t" = mmio ]; then
		machine=(-M microvm,acpi=off,memory-backend=mem -global virtio-mmio.force-legacy=false
			-device vhost-user-fs-device,chardev=fs0,tag=probefs)
	else
		machine=(-M pc,memory-backend=mem -device vhost-user-fs-pci,chardev=fs0,tag=probefs)
	fi
	STATUS=0
	timeout --signal=KILL 120 qemu-system-x86_64 -accel "$accel" "${machine[@]}" -m 256M \
		-object memory-backend-memfd,id=mem,size=256M,share=on \
		-chardev "socket,id=fs0,path=$VIRTIOFSD_SOCK" -nographic -no-reboot \
		-kernel "$FW/probe.elf" -device isa-debug-exit,iobase=0xf4 \
		-append "test=fs fs.tag=probefs fs.file=data.bin fs.getattrs=1000 $*" </dev/null \
		>"$TEST_TMP/$name.out" 2>"$TEST_TMP/$name.err" || STATUS=$?
	virtiofsd_ended "$name"
}

for t in mmio pci; do
	name=qemu-$t
	qemu_fs "$name" "$t" fs.size=$SIZE fs.crc32="$FILE_CRC"
	[ "$STATUS" = 1 ] || { show "$name"; fail "$name: QEMU exit status $STATUS, expected 1 (PASS)"; }
	expect_line "$name" out '^probe: PASS'
	expect_line "$name" out "^probe: fs devices=1 transport=$t tag=probefs request_queues=1\$"
	expect_line "$name" out '^probe: fs lookup missing error=2$'
	expect_line "$name" out "^probe: fs read bytes=$SIZE chunk=131072 depth=4 .* crc32=$FILE_CRC\$"
	expect_line "$name" out '^probe: fs readdir entries=4 found=1$'
	expect_line "$name" out '^probe: fs getattr ops=1000 '
done

# Bigger reads, all eight in flight, and one at a time.
qemu_fs qemu-deep pci fs.size=$SIZE fs.crc32="$FILE_CRC" fs.chunk=1M fs.depth=8
[ "$STATUS" = 1 ] || { show qemu-deep; fail "qemu-deep: QEMU exit status $STATUS, expected 1"; }
expect_line qemu-deep out "^probe: fs read bytes=$SIZE chunk=1048576 depth=8 "
qemu_fs qemu-one mmio fs.size=$SIZE fs.crc32="$FILE_CRC" fs.chunk=4096 fs.depth=1
[ "$STATUS" = 1 ] || { show qemu-one; fail "qemu-one: QEMU exit status $STATUS, expected 1"; }

# What the probe checks fails it, with its reason.
bad_crc=$(printf '%08x' $((0x$FILE_CRC ^ 1)))
for c in "crc|fs.size=$SIZE fs.crc32=$bad_crc|CRC-32 of the file differs" \
	"size|fs.size=$((SIZE + 1)) fs.crc32=$FILE_CRC|GETATTR's size is not fs.size" \
	"tag|fs.size=$SIZE fs.tag=other|the device's tag is not fs.tag" \
	"name|fs.size=$SIZE fs.file=nothere|LOOKUP of fs.file failed"; do
	IFS='|' read -r what args reason <<<"$c"
	name=qemu-bad-$what
	# shellcheck disable=SC2086 # the case's words
	qemu_fs "$name" mmio $args
	[ "$STATUS" = 3 ] || { show "$name"; fail "$name: QEMU exit status $STATUS, expected 3 (FAIL)"; }
	expect_line "$name" out "^probe: FAIL fs: $reason"
done
exit 0
