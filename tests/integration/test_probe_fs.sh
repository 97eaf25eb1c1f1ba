#!/usr/bin/env bash
# virtio-fs end to end: the probe (test=fs) reads a host file of a few MiB through minivmm's
# vhost-user front end and Debian's virtiofsd, on each transport: every byte against the host's
# CRC-32, the file's size, the root's listing, a missing name refused with ENOENT. virtiofsd
# ends with its session; it is killed, and its pid file removed, on every other exit path.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/virtiofsd.sh"
need_kvm
find_virtiofsd

SIZE=$((3 * 1048576 + 12345))
share_file "$TEST_TMP/share" data.bin "$SIZE"
echo hello >"$TEST_TMP/share/hello"

for t in mmio pci; do
	name=fs-$t
	start_virtiofsd "$name" "$TEST_TMP/share"
	# (minivmm waits for the socket itself)
	run_vmm "$name" 120 --kernel "$FW/probe.elf" --memory 256M \
		--fs "socket=$VIRTIOFSD_SOCK,tag=probefs,transport=$t" \
		--cmdline "test=fs fs.tag=probefs fs.file=data.bin fs.size=$SIZE fs.crc32=$FILE_CRC"
	expect_probe_pass "$name"
	virtiofsd_ended "$name"
	expect_line "$name" out "^probe: fs devices=1 transport=$t tag=probefs request_queues=1\$"
	expect_line "$name" out '^probe: fs lookup missing error=2$'
	expect_line "$name" out "^probe: fs read bytes=$SIZE chunk=131072 depth=4 .* crc32=$FILE_CRC\$"
	expect_line "$name" out '^probe: fs readdir entries=4 found=1$'
	expect_line "$name" out '^probe: fs getattr ops=10000 '
	! grep -q 'needs reset' "$TEST_TMP/$name.err" || { show "$name"; fail "$name: the device needed a reset"; }
done

# A wrong sum fails the probe (status 1), and minivmm and virtiofsd still end cleanly.
name=fs-bad-crc
start_virtiofsd "$name" "$TEST_TMP/share"
run_vmm "$name" 120 --kernel "$FW/probe.bzImage" --memory 256M \
	--fs "socket=$VIRTIOFSD_SOCK,tag=probefs" \
	--cmdline "test=fs fs.file=data.bin fs.size=$SIZE fs.crc32=$(printf '%08x' $((0x$FILE_CRC ^ 1)))"
expect_status "$name" 1
expect_line "$name" out '^probe: FAIL fs: CRC-32 of the file differs from fs.crc32'
virtiofsd_ended "$name"
exit 0
