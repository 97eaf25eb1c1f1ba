#!/usr/bin/env bash
# The probe guest boots from both images, with 1 and 2 vCPUs, and checks what it was given.
source "$(dirname "$0")/lib.sh"
need_kvm

# initrd with a known CRC-32 (gzip's trailer carries the zlib CRC-32 of its input).
head -c 300000 /dev/urandom >"$TEST_TMP/initrd"
crc=$(gzip -c "$TEST_TMP/initrd" | tail -c8 | od -An -tx4 -N4 | tr -d ' ')

for image in probe.bzImage probe.elf; do
	case $image in *.elf) proto=pvh ;; *) proto=linux64 ;; esac
	for cpus in 1 2; do
		name=${image%.*}-$proto-$cpus
		cmdline="test=boot expect.mem=256M expect.cpus=$cpus initrd.crc32=$crc initrd.size=300000"
		run_vmm "$name" 60 --kernel "$FW/$image" --cpus "$cpus" --memory 256M \
			--initrd "$TEST_TMP/initrd" --cmdline "$cmdline"
		expect_probe_pass "$name"
		expect_line "$name" out "^probe: boot protocol=$proto\$"
		expect_line "$name" out "^probe: cmdline=\"$cmdline\"\$"
		expect_line "$name" out "^probe: e820 ok"
		expect_line "$name" out "^probe: ram ok ranges=2 words=[0-9]+ above_4g=0\$"
		expect_line "$name" out "^probe: initrd addr=0x[0-9a-f]+ size=300000 crc32=$crc\$"
		expect_line "$name" out "^probe: cpus=$cpus online=$cpus\$"
		for ((i = 0; i < cpus; i++)); do
			expect_line "$name" out "^probe: cpu $i apic_id=$i online\$"
		done
		[ "$(count_lines "$name" err '^minivmm: vcpu [0-9]+: tid [0-9]+, host cpus')" = "$cpus" ] ||
			fail "$name: expected one thread line per vCPU"
	done
done

# Without an initrd, and with memory that needs the 3-4 GiB hole: RAM continues at 4 GiB, and
# the probe writes and reads back a pattern in each RAM range, that one included.
run_vmm big-memory 60 --kernel "$FW/probe.bzImage" --memory 5G --no-populate \
	--cmdline "test=boot expect.mem=5G"
expect_probe_pass big-memory
expect_line big-memory out '^probe: e820 entries=[0-9]+ ram=5368[0-9]{6} ok'
expect_line big-memory out '^probe: ram range addr=0x100000000 size=0x80000000 words=16$'
expect_line big-memory out '^probe: ram ok ranges=3 words=[0-9]+ above_4g=16$'

# The ELF also boots through the Linux 64-bit entry when asked to.
run_vmm elf-linux64 60 --kernel "$FW/probe.elf" --boot linux64 --cmdline "test=boot"
expect_probe_pass elf-linux64
expect_line elf-linux64 out '^probe: boot protocol=linux64$'
exit 0
