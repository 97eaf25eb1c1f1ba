#!/bin/busybox sh
# The nested suite's L2 guest: PID 1 of a stock Debian kernel under minivmm. Loads the virtio
# drivers, then runs the scenario the kernel command line names (l2=NAME) and ends the way the
# scenario says (reboot, poweroff, or a shell on the console). Lines starting "L2:" are what
# tests/linux/scenarios.sh checks in minivmm's console output.
/bin/busybox --install -s /bin 2>/dev/null
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /tmp /mnt
mount -t tmpfs tmp /tmp

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | head -n 1; }
say() { echo "L2: $*"; }
fail() { say "FAIL $*"; poweroff -f; }

for m in $(cat /modules/order); do
	[ -d "/sys/module/$(echo "$m" | tr - _)" ] || insmod "/modules/$m.ko" || say "insmod $m failed"
done

# Booting from a disk (l2.root=DEV): this initramfs only loads the drivers Debian builds as
# modules, then hands over to /sbin/init on the disk, as a distribution's initramfs does.
root=$(arg l2.root)
if [ -n "$root" ] && [ "$$" = 1 ] && [ -f /init ]; then
	mkdir -p /newroot
	wait_dev=0
	while [ ! -b "$root" ] && [ $wait_dev -lt 100 ]; do sleep 0.1; wait_dev=$((wait_dev + 1)); done
	mount -t ext4 "$root" /newroot || fail "cannot mount $root"
	umount /tmp /proc /sys 2>/dev/null
	mount --move /dev /newroot/dev
	exec switch_root /newroot /sbin/init
fi

# Wait up to 10 s for a path to appear (drivers probe asynchronously).
wait_for() {
	local i=0
	while [ ! -e "$1" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e "$1" ]
}

# Bring eth N up with ADDR/24.
net_up() {
	ip link set lo up
	wait_for "/sys/class/net/$1" || fail "no $1"
	ip addr add "$2/24" dev "$1"
	ip link set "$1" up
}

# A shell on the console: stdin and stdout are ttyS0 (through its interrupt-driven tty driver).
console_shell() {
	say "SHELL READY"
	exec setsid sh -c 'exec sh -i </dev/ttyS0 >/dev/ttyS0 2>&1'
}

# Commands typed on minivmm's stdin, one shell line each, until one ends the VM: how the test VM
# asks this guest for measurements at the right moment (no timing guesses on either side).
command_loop() {
	stty -echo </dev/ttyS0 2>/dev/null
	exec 3</dev/ttyS0
	say "WAITING"
	while read -r line <&3; do eval "$line"; done
	fail "console input closed"
}

memfree() { sed -n 's/^MemFree: *\([0-9]*\) kB/\1/p' /proc/meminfo; }

# The snapshot scenario's readings: the two files it wrote to /mnt, and both clocks
# (CLOCK_MONOTONIC as the uptime in centiseconds, CLOCK_REALTIME in seconds).
sums() { say "$1 f1=$(sha256sum </mnt/f1 | cut -d' ' -f1) f2=$(sha256sum </mnt/f2 | cut -d' ' -f1)"; }
clocks() { say "$1 up_cs=$(cut -d' ' -f1 /proc/uptime | tr -d .) date_s=$(date +%s)"; }

end() {
	case "$(arg l2.end)" in
	wait) command_loop ;;
	reboot) sync; reboot -f ;;
	shell) console_shell ;;
	hold) say "HOLDING"; while :; do sleep 60; done ;;
	*) sync; poweroff -f ;;
	esac
	sleep 30
	say "FAIL still running after $(arg l2.end)"
}

scenario=$(arg l2)
say "BOOTED $scenario"
case "$scenario" in
console)
	echo "USERSPACE_STDOUT"
	echo "DEV_TTYS0" >/dev/ttyS0
	console_shell
	;;
console_virtio)
	# The same on hvc0 (--console virtio: minivmm's stdin goes there, not to ttyS0), and
	# big-write: 1 MiB of base64 between markers, then its checksum, for the host to compare.
	wait_for /dev/hvc0 || fail "no /dev/hvc0"
	cat >/bin/big-write <<-'SCRIPT'
	#!/bin/sh
	head -c 786432 /dev/urandom >/tmp/big
	sum=$(base64 -w 0 </tmp/big | sha256sum | cut -d' ' -f1)
	printf '@@BIG@@'; base64 -w 0 </tmp/big; printf '@@END@@\n'
	echo "big_sum=$sum"
	SCRIPT
	chmod +x /bin/big-write
	echo "HVC0_STDOUT" >/dev/hvc0
	say "SHELL READY"
	exec setsid sh -c 'exec sh -i </dev/hvc0 >/dev/hvc0 2>&1'
	;;
vports)
	# --vport: the named ports, found by name; each one's bytes for the host to compare (out
	# closed and opened again between two writes), 1 MiB through big, and in read to its end.
	port() {
		for d in /sys/class/virtio-ports/*; do
			[ "$(cat "$d/name" 2>/dev/null)" = "$1" ] && echo "/dev/${d##*/}"
		done
	}
	i=0
	while { [ -z "$(port in)" ] || [ -z "$(port big)" ] || [ ! -c "$(port big)" ]; } && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	out=$(port out) err=$(port err) big=$(port big) in=$(port in)
	[ -c "$out" ] && [ -c "$err" ] && [ -c "$big" ] && [ -c "$in" ] ||
		fail "named ports: $(cat /sys/class/virtio-ports/*/name | tr '\n' ' ')"
	say "ports out=$out err=$err big=$big in=$in"
	printf 'OUT-1\n' >"$out"
	printf 'ERR-1\n' >"$err"
	printf 'OUT-2\n' >"$out"
	head -c 1048576 /dev/urandom >/tmp/big
	say "big_sum=$(sha256sum </tmp/big | cut -d' ' -f1)"
	cat /tmp/big >"$big" || say "FAIL writing 1 MiB to $big"
	cat "$in" >/tmp/in || say "FAIL reading $in"
	say "in_len=$(wc -c </tmp/in) in_sum=$(sha256sum </tmp/in | cut -d' ' -f1)"
	cat "$in" >/tmp/in2 && say "in_again=$(wc -c </tmp/in2)"
	poweroff -f
	;;
reboot) sync; reboot -f ;;
poweroff) poweroff -f ;;
panic) echo c >/proc/sysrq-trigger ;;
info)
	say "cpus=$(grep -c ^processor /proc/cpuinfo) online=$(cat /sys/devices/system/cpu/online)"
	say "memtotal_kb=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)"
	say "cmdline_len=$(wc -c </proc/cmdline)"
	say "rtc=$(cat /sys/class/rtc/rtc0/name 2>/dev/null || echo none) year=$(date +%Y)"
	say "last=$(arg l2.last)"
	say "ttyS0_irq=$(grep -c ttyS0 /proc/interrupts)"
	say "virtio=$(ls /sys/bus/virtio/devices 2>/dev/null | wc -l)"
	end
	;;
net)
	# l2.nics=N NICs, ethI at 10.0.(2+I).15 with the test VM at .1; a transfer each way on eth0:
	# fetch l2.mib MiB from the test VM's httpd, then serve as much for it to fetch.
	nics=$(arg l2.nics)
	i=0
	while [ $i -lt "${nics:-1}" ]; do
		net_up "eth$i" "10.0.$((2 + i)).15"
		ping -c 2 -W 5 "10.0.$((2 + i)).1" >/dev/null && say "ping eth$i ok" || say "FAIL ping eth$i"
		i=$((i + 1))
	done
	# Feature bit 0 is VIRTIO_NET_F_CSUM: what offload=on|off offers, as the driver saw it.
	say "csum=$(cut -c1 /sys/class/net/eth0/device/features)"
	wget -q -O /tmp/got http://10.0.2.1:8080/data || say "FAIL wget from the test VM"
	say "got $(sha256sum </tmp/got | cut -d' ' -f1) bytes=$(wc -c </tmp/got)"
	rm -f /tmp/got
	mkdir -p /tmp/www
	dd if=/dev/urandom of=/tmp/www/data bs=1M count="$(arg l2.mib)" 2>/dev/null
	say "serving $(sha256sum </tmp/www/data | cut -d' ' -f1)"
	httpd -p 8080 -h /tmp/www
	end
	;;
user)
	# The user-mode backend: an address by DHCP, and a listener a hostfwd rule reaches.
	ip link set lo up
	wait_for /sys/class/net/eth0 || fail "no eth0"
	ip link set eth0 up
	cat >/tmp/udhcpc.sh <<-'SCRIPT'
	#!/bin/sh
	[ "$1" = bound ] && ip addr add "$ip/${mask:-24}" dev "$interface" && echo "$ip router $router" >/tmp/lease
	exit 0
	SCRIPT
	chmod +x /tmp/udhcpc.sh
	udhcpc -q -n -f -t 5 -i eth0 -s /tmp/udhcpc.sh >/dev/null 2>&1 || say "FAIL no DHCP lease"
	say "dhcp $(cat /tmp/lease)"
	mkdir -p /tmp/www
	echo HOSTFWD_OK >/tmp/www/hello
	httpd -p 7777 -h /tmp/www
	end
	;;
blk)
	# vda: a fresh ext4 with files; l2.ro=DEV must be read-only; l2.trim: fstrim frees a file.
	wait_for /dev/vda || fail "no /dev/vda"
	/sbin/mke2fs -q -t ext4 /dev/vda || fail "mke2fs"
	mount -t ext4 /dev/vda /mnt || fail "mount"
	dd if=/dev/urandom of=/mnt/f1 bs=1M count=8 2>/dev/null
	echo hello-from-l2 >/mnt/f2
	say "f1 $(sha256sum </mnt/f1 | cut -d' ' -f1)"
	if [ -n "$(arg l2.trim)" ]; then
		dd if=/dev/zero of=/mnt/big bs=1M count=24 2>/dev/null
		sync
		rm /mnt/big
		sync
		fstrim /mnt && say "trimmed" || say "FAIL fstrim"
	fi
	umount /mnt || fail "umount"
	ro=$(arg l2.ro)
	if [ -n "$ro" ]; then
		wait_for "/dev/$ro" || fail "no /dev/$ro"
		say "$ro ro=$(cat /sys/block/$ro/ro)"
		if dd if=/dev/zero of="/dev/$ro" bs=4096 count=1 oflag=direct 2>/dev/null; then
			say "FAIL a write to read-only $ro succeeded"
		else
			say "$ro write refused"
		fi
	fi
	say "disks=$(ls -d /sys/block/vd* | wc -l)"
	end
	;;
fs | share | share_ro | share_kill)
	# The host's directory through virtio-fs (tag hostshare): read, list, write, fsync, rename,
	# a file read through its descriptor after its unlink; then the command loop (the test VM
	# changes a file on the host and asks for it again).
	mkdir -p /mnt/fs
	mount -t virtiofs hostshare /mnt/fs || fail "mount -t virtiofs hostshare"
	say "fs hello=$(cat /mnt/fs/hello)"
	say "fs big=$(sha256sum </mnt/fs/big | cut -d' ' -f1)"
	say "fs ls=$(ls /mnt/fs | tr '\n' ,)"
	if [ -n "$(arg l2.fsro)" ]; then
		# --share DIR,readonly: nothing the guest does changes the host's directory.
		echo new >/mnt/fs/new 2>/dev/null && say "FAIL wrote into a read-only share"
		rm /mnt/fs/hello 2>/dev/null && say "FAIL removed from a read-only share"
		say "fs ro=refused"
		end
	fi
	dd if=/dev/urandom of=/mnt/fs/fromguest bs=64K count=48 2>/dev/null
	sync /mnt/fs/fromguest || say "FAIL fsync" # busybox: fsync() of the file
	say "fs wrote=$(sha256sum </mnt/fs/fromguest | cut -d' ' -f1)"
	mv /mnt/fs/fromguest /mnt/fs/renamed || say "FAIL rename"
	echo still-here >/mnt/fs/tmpfile
	exec 4</mnt/fs/tmpfile
	rm /mnt/fs/tmpfile
	say "fs unlinked_size=$(stat -L -c %s /proc/self/fd/4) unlinked_read=$(cat <&4)"
	exec 4<&-
	[ -e /mnt/fs/tmpfile ] && say "FAIL tmpfile still there" || say "fs gone=yes"
	cat /mnt/fs/missing 2>/dev/null && say "FAIL read a missing file" || say "fs missing=refused"
	end
	;;
boot) end ;;
rootfs)
	say "root $(awk '$2 == "/" && $1 != "rootfs" {print $1, $3}' /proc/mounts) init=$(readlink /proc/1/exe)"
	end
	;;
rng)
	# Every virtio-rng device in turn: 64 KiB of its entropy does not compress (a stuck or
	# patterned source would).
	for r in $(cat /sys/class/misc/hw_random/rng_available); do
		echo "$r" >/sys/class/misc/hw_random/rng_current
		say "rng $r gz=$(head -c 65536 /dev/hwrng | gzip -c | wc -c)"
	done
	end
	;;
balloon)
	# Touch memory so that it is the VMM's (RSS), free it again, then wait for commands.
	dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>/dev/null
	rm /tmp/fill
	say "memfree=$(memfree)"
	end
	;;
snapshot)
	# Saved and restored by the test VM (scenarios.sh, sc_snapshot_linux): its ext4 disk
	# mounted, eth0 on its tap, an rng; it writes, saves, restores and checks through the
	# command loop (sums, clocks).
	wait_for /dev/vda || fail "no /dev/vda"
	mount -t ext4 /dev/vda /mnt || fail "cannot mount /dev/vda"
	net_up eth0 10.0.2.15
	ping -c 2 -W 5 10.0.2.1 >/dev/null && say "ping before ok" || say "FAIL ping before the snapshot"
	wait_for /dev/hwrng || fail "no /dev/hwrng"
	say "rng $(cat /sys/class/misc/hw_random/rng_current)"
	end
	;;
ping)
	net_up eth0 10.0.2.15
	ping -i 0.5 10.0.2.1 &
	end
	;;
*)
	say "FAIL unknown scenario '$scenario'"
	end
	;;
esac
sleep 30
say "FAIL scenario $scenario did not end the VM"
