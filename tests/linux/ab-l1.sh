# The A/B of tests/linux/ab-boot.sh (issue 35) inside the L1 test VM: sourced by host-init.sh
# (busybox sh) in place of the scenarios when the image has it (build-images.sh --ab). Boots the
# L2 guest again and again, alternating minivmm and QEMU (-accel kvm on the test VM's nested
# /dev/kvm) with the same kernel, initramfs, command line, memory and vCPUs, and prints one line
# per boot:
#   @@ AB-START I VMM CPUS
#   @@ AB I VMM CPUS OUTCOME first_ms=F marker_ms=M wall_ms=W exit=S
# OUTCOME: ok (the guest's marker, then its orderly end), silent (no console byte within
# ab.first seconds: killed), triple (minivmm's status 98; QEMU, which -no-reboot makes exit 0 on
# any reset, ended without the guest's own last words: a reset nobody asked for), panic (the
# kernel's "Kernel panic" on the console), hung (printed, but not ended within ab.limit seconds:
# killed), died (any other end). F and M are -1 when there was no byte or no marker. Each boot's
# line is followed by its console's first line, and when it is not ok by the end of its console
# and stderr, indented.
# The kernel command line says what to run: ab.boots=N rounds; ab.cpus=1,2,4 (each round boots
# every vCPU count under both VMMs: minivmm first in even rounds, QEMU first in odd ones);
# ab.guest=linux|probe; ab.from=I (the boot to start from: a fresh test VM goes on where a dead
# one stopped); ab.first=SECONDS; ab.limit=SECONDS; ab.machine=M (QEMU's -M, e.g. microvm,pcie=on).

ab_arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p"; }

# The L2 guest's command line, as the suite's (scenarios.sh) with the boot scenario: guest-init.sh
# prints its marker, then powers off.
AB_LINUX_CMDLINE="$L2_CMDLINE l2=boot"
AB_QEMU="qemu-system-x86_64 -accel kvm -cpu host -m 256M -nodefaults -no-user-config -display none -serial stdio -no-reboot"

# ab_boot I VMM CPUS: one boot under first-byte, its line printed.
ab_boot() {
	local i=$1 vmm=$2 cpus=$3 t0 t1 fb fbyte marker rc timed outcome out err ok_end
	local dir=/tmp/ab
	mkdir -p $dir
	out=$dir/$i.out
	err=$dir/$i.err
	if [ "$AB_GUEST" = probe ]; then
		local cmd="test=boot expect.cpus=$cpus expect.mem=256M"
		local mark="probe: PASS"
		if [ "$vmm" = minivmm ]; then
			set -- minivmm --kernel /probe/probe.elf --cpus "$cpus" --memory 256M --cmdline "$cmd"
		else
			set -- $AB_QEMU -M "$AB_MACHINE" -smp "$cpus" -kernel /probe/probe.elf \
				-device isa-debug-exit,iobase=0xf4 -append "$cmd"
		fi
	else
		local mark="L2: BOOTED boot"
		if [ "$vmm" = minivmm ]; then
			set -- minivmm --kernel $L2_KERNEL --initrd $L2_INITRD --cpus "$cpus" --memory 256M \
				--cmdline "$AB_LINUX_CMDLINE"
		else
			set -- $AB_QEMU -M "$AB_MACHINE" -smp "$cpus" -kernel $L2_KERNEL -initrd $L2_INITRD \
				-append "$AB_LINUX_CMDLINE"
		fi
	fi
	echo "@@ AB-START $i $vmm $cpus"
	read t0 _ </proc/uptime
	fb=$(/probe/first-byte --first-timeout "$AB_FIRST" --timeout "$AB_LIMIT" --until "$mark" \
		--out "$out" --err "$err" -- "$@")
	read t1 _ </proc/uptime
	fbyte=$(echo "$fb" | sed -n 's/.*first_byte_us=\(-*[0-9]*\).*/\1/p')
	marker=$(echo "$fb" | sed -n 's/^until_us=\(-*[0-9]*\)/\1/p')
	rc=$(echo "$fb" | sed -n 's/.* exit=\([0-9]*\).*/\1/p')
	timed=$(echo "$fb" | sed -n 's/.*timed_out=\([0-9]\).*/\1/p')
	# The guest's orderly end: its status, and for Linux its last words (a reset says none).
	if [ "$AB_GUEST" = probe ]; then
		# isa-debug-exit turns the probe's 0 into QEMU's 1.
		ok_end=0
		[ "$vmm" = qemu ] && ok_end=1
		[ "$rc" = $ok_end ] && ok_end=yes
	else
		ok_end=no
		[ "$rc" = 0 ] && grep -q 'reboot: Power down' $out && ok_end=yes
	fi
	if [ "$timed" = 1 ] && [ "${fbyte:--1}" -lt 0 ]; then
		outcome=silent
	elif grep -q 'Kernel panic' $out; then
		outcome=panic
	elif [ "$timed" = 1 ]; then
		outcome=hung
	elif [ "$vmm" = minivmm ] && [ "$rc" = 98 ]; then
		outcome=triple
	elif [ "$vmm" = qemu ] && [ "$rc" = 0 ] && [ "$ok_end" != yes ] &&
		! grep -q 'reboot: Restarting system' $out; then
		outcome=triple
	elif [ "$ok_end" = yes ] && [ "${marker:--1}" -ge 0 ]; then
		outcome=ok
	else
		outcome=died
	fi
	[ "${fbyte:--1}" -ge 0 ] && fbyte=$((fbyte / 1000))
	[ "${marker:--1}" -ge 0 ] && marker=$((marker / 1000))
	echo "@@ AB $i $vmm $cpus $outcome first_ms=${fbyte:--1} marker_ms=${marker:--1} wall_ms=$(((${t1%.*}${t1#*.} - ${t0%.*}${t0#*.}) * 10)) exit=${rc:-?}"
	# What the guest printed first (Linux under quiet: its init's marker, unless the kernel
	# complained: under QEMU -M microvm it does, a second into its boot, about PCI).
	tr -d '\r' <$out | sed -n '1{s/^/   first line: /;p;q}' | cut -c1-160
	if [ $outcome != ok ]; then
		echo "   first-byte: $fb" | tr '\n' ' '
		echo
		tr -d '\r' <$out | tail -n 15 | sed 's/^/   console: /'
		tail -n 15 $err | sed 's/^/   stderr: /'
	fi
	rm -f $out $err
}

ab_run() {
	AB_GUEST=$(ab_arg ab.guest)
	AB_FIRST=$(ab_arg ab.first)
	AB_LIMIT=$(ab_arg ab.limit)
	AB_MACHINE=$(ab_arg ab.machine)
	local boots=$(ab_arg ab.boots) cpus=$(ab_arg ab.cpus | tr , ' ') i=$(ab_arg ab.from)
	local n=$(echo $cpus | wc -w) total r c vmm
	total=$((boots * n * 2))
	[ -e /dev/kvm ] || echo "@@ AB-ERROR no /dev/kvm in the test VM"
	while [ "$i" -lt $total ]; do
		r=$((i / (2 * n)))
		c=$(echo $cpus | cut -d' ' -f$(((i / 2) % n + 1)))
		vmm=minivmm
		[ $(((i + r) % 2)) = 1 ] && vmm=qemu
		ab_boot $i $vmm $c
		i=$((i + 1))
	done
}
