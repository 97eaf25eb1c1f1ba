# The nested suite's scenarios, sourced by host-init.sh inside the L1 test VM (busybox sh).
# Each scenario is a function sc_NAME that boots one or more L2 guests with minivmm and checks
# what they printed ("L2: ..." lines from guest-init.sh) and how minivmm exited. A failing
# check calls fail; its minivmm console and stderr are then printed for the log.

L2_KERNEL=/l2/vmlinuz
L2_INITRD=/l2/initramfs.gz
L2_CMDLINE="console=ttyS0 panic=-1 quiet printk.devkmsg=on"
W=/tmp/work

# A failed check is recorded (run_all fails the scenario on it even if later steps pass).
fail() { echo "CHECK FAILED: $*"; echo "$*" >>"$W/.failed"; return 1; }

# Every L2 guest's init prints "L2: BOOTED" first, a median 9 s and at most 20.4 s after minivmm
# starts (100 boots of issue 35's A/B, loaded machine): one that has printed nothing after
# L2_FIRST seconds is silent, killed then rather than at its scenario's limit (60-180 s), and
# the check says so.
L2_FIRST=${L2_FIRST:-30}

# watch_l2 NAME PID LIMIT: SIGKILL minivmm (PID) after LIMIT seconds, or after L2_FIRST with
# nothing on its console ($W/NAME.out; $W/NAME.silent says why). Ends with the process.
watch_l2() {
	local up start now
	read up _ </proc/uptime
	start=${up%.*}
	while kill -0 "$2" 2>/dev/null; do
		read up _ </proc/uptime
		now=$((${up%.*} - start))
		if [ $now -ge "$L2_FIRST" ] && [ ! -s "$W/$1.out" ]; then
			echo "no console byte within ${L2_FIRST}s: a silent guest, killed" >"$W/$1.silent"
			kill -KILL "$2"
			return
		fi
		[ $now -ge "$3" ] && { kill -KILL "$2"; return; }
		sleep 0.1
	done
}

# run_l2 NAME LIMIT STDIN ARGS...: minivmm ARGS under watch_l2, its stdin from STDIN, console
# in $W/NAME.out, stderr in $W/NAME.err, exit status in $W/NAME.rc (137 when killed). (The
# redirections are minivmm's own: an asynchronous command's stdin would be /dev/null, and a
# check's line must not land in the console file.)
run_l2() {
	local name=$1 limit=$2 in=$3 rc=0 pid watcher
	shift 3
	minivmm "$@" <"$in" >"$W/$name.out" 2>"$W/$name.err" &
	pid=$!
	watch_l2 "$name" $pid "$limit" &
	watcher=$!
	wait $pid || rc=$?
	kill $watcher 2>/dev/null
	wait $watcher 2>/dev/null
	echo $rc >"$W/$name.rc"
	[ -f "$W/$name.silent" ] && fail "$name: $(cat "$W/$name.silent")"
	return 0
}

# l2 NAME TIMEOUT [minivmm args...] -- KERNEL ARGS: boot the L2 guest with the given scenario;
# console in $W/NAME.out, stderr in $W/NAME.err, exit status in $W/NAME.rc.
l2() {
	local name=$1 limit=$2 extra=""
	shift 2
	local args=""
	while [ $# -gt 0 ] && [ "$1" != -- ]; do args="$args $1"; shift; done
	[ "${1:-}" = -- ] && shift
	extra="$*"
	LAST=$name
	run_l2 "$name" "$limit" /dev/null --kernel $L2_KERNEL --initrd $L2_INITRD $args \
		--cmdline "$L2_CMDLINE l2=$name $extra"
}

status_of() { cat "$W/$1.rc"; }
expect_status() { [ "$(status_of "$1")" = "$2" ] || fail "$1: minivmm exit status $(status_of "$1"), expected $2"; }
expect_out() { grep -q -- "$2" "$W/$1.out" || fail "$1: no '$2' on the console"; }
expect_no_fail() { ! grep -q '^L2: FAIL' "$W/$1.out" || fail "$1: $(grep -m1 '^L2: FAIL' "$W/$1.out")"; }

# l2_start NAME TIMEOUT [minivmm args...] -- KERNEL ARGS: the same, in the background, with
# minivmm's stdin a FIFO that send() writes lines to (the guest's command loop reads them).
l2_start() {
	local name=$1 limit=$2 args=""
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do args="$args $1"; shift; done
	[ "${1:-}" = -- ] && shift
	LAST=$name
	mkfifo "$W/$name.in"
	exec 7<>"$W/$name.in"
	run_l2 "$name" "$limit" "$W/$name.in" --kernel $L2_KERNEL --initrd $L2_INITRD $args \
		--cmdline "$L2_CMDLINE l2=$name l2.end=wait $*" &
	VMM_JOB=$!
	i=0
	while ! VMM_PID=$(pidof minivmm) && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}

send() { echo "$2" >"$W/$1.in"; }

# wait_out NAME PATTERN [SECONDS]: until the console shows PATTERN; fails if minivmm ends first.
wait_out() {
	local i=0 limit=$((${3:-120} * 10))
	while ! grep -q -- "$2" "$W/$1.out" 2>/dev/null; do
		[ -f "$W/$1.rc" ] && { fail "$1: minivmm ended (status $(cat "$W/$1.rc")) before '$2'"; return 1; }
		[ $i -ge $limit ] && { fail "$1: no '$2' within ${3:-120}s"; return 1; }
		sleep 0.1
		i=$((i + 1))
	done
}

# The value after "KEY=" or "KEY " in an "L2: " console line (last occurrence).
l2_value() { sed -n "s/^L2: \(.* \)\{0,1\}$2[= ]\([^ ]*\).*/\2/p" "$W/$1.out" | tr -d '\r' | tail -n 1; }

# finish NAME: power the guest off through its command loop and wait for minivmm to exit.
finish() {
	send "$1" "poweroff -f"
	wait "$VMM_JOB"
	exec 7>&-
}

sc_reboot() {
	l2 reboot 60 --cpus 2
	expect_status reboot 0 && expect_out reboot 'reboot: Restarting system'
}

sc_poweroff() {
	l2 poweroff 60 --cpus 2
	expect_status poweroff 0 && expect_out poweroff 'reboot: Power down'
}

sc_panic() {
	l2 panic 60
	expect_status panic 0 && expect_out panic 'Kernel panic'
}

# A guest that prints nothing (a quiet kernel whose init, busybox cat, waits on the console's
# input) is killed L2_FIRST seconds after its start, not at its limit, and the check says it
# was silent; that check fired as it should here, so its line is taken back.
sc_silent() {
	local t0 t1 L2_FIRST=5
	read t0 _ </proc/uptime
	l2 silent 120 -- rdinit=/bin/busybox -- cat
	read t1 _ </proc/uptime
	local took=$((${t1%.*} - ${t0%.*}))
	echo "silent: killed after ${took}s (L2_FIRST=5, limit 120)"
	grep -q '^silent: no console byte within 5s' "$W/.failed" 2>/dev/null ||
		{ fail "silent: no check said the guest was silent"; return 1; }
	grep -v '^silent: no console byte within 5s' "$W/.failed" >"$W/.failed.rest" || true
	if [ -s "$W/.failed.rest" ]; then mv "$W/.failed.rest" "$W/.failed"; else rm -f "$W/.failed" "$W/.failed.rest"; fi
	expect_status silent 137 || return 1
	[ ! -s "$W/silent.out" ] || { fail "silent: the guest printed: $(head -c 200 "$W/silent.out")"; return 1; }
	[ $took -lt 30 ] || fail "silent: killed after ${took}s, not soon after 5s"
}

# The legacy devices the DSDT describes have working interrupts; virtio devices on both
# transports bind (mmio ones through ACPI: Debian's virtio_mmio ignores the command line).
sc_info() {
	l2 info 90 --cpus 2 --rng --rng,transport=mmio --balloon,transport=mmio -- l2.end=poweroff
	expect_status info 0 && expect_out info 'L2: rtc=rtc_cmos' &&
		expect_out info 'L2: ttyS0_irq=1' && expect_out info 'L2: virtio=3'
}

# Userspace output through the tty driver, a shell answering a line typed on minivmm's stdin
# (a terminal: script(1) gives it a pseudo-terminal), and Ctrl-A x ending minivmm with status 0.
sc_console() {
	local log=$W/console.out rc=0
	: >"$log"
	LAST=console
	{
		i=0
		while ! grep -q 'L2: SHELL READY' "$log" && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
		sleep 1
		echo 'echo ANSWER=$((6 * 7))'
		i=0
		while ! grep -q 'ANSWER=42' "$log" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		printf '\001x'
	} | timeout -s KILL 120 script -qefc "minivmm --kernel $L2_KERNEL --initrd $L2_INITRD \
		--cmdline '$L2_CMDLINE l2=console'" "$log" >/dev/null 2>&1 || rc=$?
	echo $rc >"$W/console.rc"
	: >"$W/console.err"
	expect_out console USERSPACE_STDOUT && expect_out console DEV_TTYS0 &&
		expect_out console 'ANSWER=42' && expect_out console 'quit requested from the console' &&
		expect_status console 0
}

# --console virtio on TRANSPORT: a shell on hvc0 answers a line typed on minivmm's stdin (which
# goes to hvc0, not COM1), 1 MiB written to hvc0 arrives whole (its checksum, computed in the
# guest, matches what the host got), and Ctrl-A x still ends minivmm with status 0.
console_virtio_run() {
	local name=$1 transport=$2 log=$W/$1.out rc=0
	: >"$log"
	LAST=$name
	{
		i=0
		while ! grep -q 'L2: SHELL READY' "$log" && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
		sleep 1
		echo 'echo ANSWER=$((6 * 7))'
		i=0
		while ! grep -q 'ANSWER=42' "$log" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		echo 'big-write'
		i=0
		while ! grep -q 'big_sum=[0-9a-f]' "$log" && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
		printf '\001x'
	} | timeout -s KILL 240 script -qefc "minivmm --kernel $L2_KERNEL --initrd $L2_INITRD \
		--console virtio,transport=$transport \
		--cmdline '$L2_CMDLINE l2=console_virtio'" "$log" >/dev/null 2>&1 || rc=$?
	echo $rc >"$W/$name.rc"
	: >"$W/$name.err"
	expect_out $name HVC0_STDOUT && expect_out $name 'ANSWER=42' &&
		expect_out $name 'quit requested from the console' && expect_status $name 0 || return 1
	local want got len
	want=$(grep -o 'big_sum=[0-9a-f]*' "$log" | tail -n 1 | cut -d= -f2)
	got=$(sed -n 's/.*@@BIG@@\(.*\)@@END@@.*/\1/p' "$log" | tr -d '\r\n' | sha256sum | cut -d' ' -f1)
	len=$(sed -n 's/.*@@BIG@@\(.*\)@@END@@.*/\1/p' "$log" | tr -d '\r\n' | wc -c)
	[ "$len" = 1048576 ] || fail "$name: the host got $len of the 1048576 bytes written to hvc0"
	[ -n "$want" ] && [ "$got" = "$want" ] ||
		fail "$name: the 1 MiB through hvc0 has checksum $got on the host, $want in the guest"
}

# --vport: four named ports of the virtio console, found by name in the guest; out (written,
# closed, opened and written again) reaches minivmm's stdout and err its file, each exactly its
# own bytes; 1 MiB through big arrives whole (the guest's checksum); in reads minivmm's stdin to
# its end of file (and at once again: the host end stays closed), and the guest powers off.
sc_vports() {
	local n=vports rc=0
	LAST=$n
	head -c 300001 /dev/urandom >"$W/in.bin"
	timeout -s KILL 240 minivmm --kernel $L2_KERNEL --initrd $L2_INITRD \
		--console "virtio,file=$W/$n.out" --vport out:stdout --vport "err:file=$W/err.bin" \
		--vport "big:file=$W/big.bin" --vport in:stdin \
		--cmdline "$L2_CMDLINE l2=$n" <"$W/in.bin" >"$W/out.bin" 2>"$W/$n.err" || rc=$?
	echo $rc >"$W/$n.rc"
	expect_status $n 0 && expect_no_fail $n && expect_out $n 'L2: ports out=/dev/vport' || return 1
	[ "$(cat "$W/out.bin")" = "$(printf 'OUT-1\nOUT-2')" ] && [ "$(wc -c <"$W/out.bin")" = 12 ] ||
		fail "$n: stdout (port out) holds '$(head -c 200 "$W/out.bin" | od -c | head -n 3)'"
	[ "$(cat "$W/err.bin")" = ERR-1 ] && [ "$(wc -c <"$W/err.bin")" = 6 ] ||
		fail "$n: err.bin (port err) holds '$(head -c 200 "$W/err.bin" | od -c | head -n 3)'"
	local len sum
	len=$(wc -c <"$W/big.bin")
	sum=$(sha256sum <"$W/big.bin" | cut -d' ' -f1)
	[ "$len" = 1048576 ] || fail "$n: the host got $len of the 1048576 bytes written to big"
	[ "$sum" = "$(l2_value $n big_sum)" ] ||
		fail "$n: big's 1 MiB has checksum $sum on the host, $(l2_value $n big_sum) in the guest"
	[ "$(l2_value $n in_len)" = 300001 ] &&
		[ "$(l2_value $n in_sum)" = "$(sha256sum <"$W/in.bin" | cut -d' ' -f1)" ] ||
		fail "$n: the guest read $(l2_value $n in_len) bytes of stdin (300001), checksum $(l2_value $n in_sum)"
	[ "$(l2_value $n in_again)" = 0 ] || fail "$n: in read again gave $(l2_value $n in_again) bytes, not its end"
}

sc_console_virtio() { console_virtio_run console_virtio pci; }
sc_console_virtio_mmio() { console_virtio_run console_virtio_mmio mmio; }

# reboot=t makes Linux triple-fault on reboot: minivmm's documented status 98.
sc_triple_fault() {
	l2 reboot 60 -- reboot=t
	expect_status reboot 98 && grep -q 'triple fault' "$W/reboot.err" ||
		fail "reboot: no triple-fault report"
}

# A long command line, RAM across the 3-4 GiB hole, four vCPUs online, pinning seen from L1.
sc_boot() {
	# Linux on x86 takes up to 2047 bytes; minivmm adds nothing here (no virtio-mmio devices).
	local pad=$(head -c 1800 /dev/zero | tr '\0' x)
	l2_start boot 120 --cpus 4 --memory 4G --pin 0=1,1=0,2=1,3=0 -- l2.pad=$pad l2.last=END
	wait_out boot 'L2: WAITING' || return 1
	send boot 'say "cpus=$(grep -c ^processor /proc/cpuinfo) online=$(cat /sys/devices/system/cpu/online)"'
	send boot 'say "memtotal_kb=$(sed -n "s/^MemTotal: *\([0-9]*\) kB/\1/p" /proc/meminfo)"'
	send boot 'say "last=$(tr " " "\n" </proc/cmdline | sed -n "s/^l2.last=//p")"'
	send boot 'say "padlen=$(tr " " "\n" </proc/cmdline | sed -n "s/^l2.pad=//p" | wc -c)"'
	wait_out boot 'L2: padlen=' || return 1
	local want t cpus
	for t in /proc/$VMM_PID/task/*; do
		case "$(cat $t/comm)" in
		vcpu0 | vcpu2) want=1 ;;
		vcpu1 | vcpu3) want=0 ;;
		*) continue ;;
		esac
		cpus=$(sed -n 's/^Cpus_allowed_list:\t*//p' $t/status)
		[ "$cpus" = $want ] || fail "$(cat $t/comm) runs on cpus '$cpus', pinned to $want"
	done
	finish boot
	expect_status boot 0 || return 1
	[ "$(l2_value boot cpus)" = 4 ] || fail "the guest sees $(l2_value boot cpus) CPUs, want 4"
	[ "$(l2_value boot online)" = 0-3 ] || fail "online CPUs $(l2_value boot online), want 0-3"
	[ "$(l2_value boot last)" = END ] || fail "the command line's last argument is lost"
	[ "$(l2_value boot padlen)" = 1801 ] || fail "the 1800-byte argument arrived as $(l2_value boot padlen)"
	# 4 GiB of RAM (some above 4 GiB): MemTotal is that less the kernel's own reservations.
	local kb=$(l2_value boot memtotal_kb)
	[ "$kb" -gt $((3900 * 1024)) ] && [ "$kb" -le $((4096 * 1024)) ] ||
		fail "MemTotal ${kb} kB for --memory 4G"
}

# taps NAME...: create tap devices with 10.0.(2+i).1/24, removed when the scenario ends.
taps() {
	local i=0 t
	for t in "$@"; do
		tunctl -t "$t" >/dev/null || { fail "tunctl $t"; return 1; }
		ip addr add "10.0.$((2 + i)).1/24" dev "$t"
		ip link set "$t" up
		i=$((i + 1))
	done
}
untaps() {
	local t # not the caller's: a scenario may keep its own t (snapshot_devices: the transport)
	for t in "$@"; do tunctl -d "$t" >/dev/null 2>&1; done
}

# net NAME MIB CSUM NICS [minivmm --net options...]: ping on every NIC, then MIB MiB over TCP
# each way on the first with both ends' SHA-256 compared; CSUM is the expected feature bit.
net_scenario() {
	local name=$1 mib=$2 csum=$3 nics=$4 t tapnames="" i=0
	shift 4
	while [ $i -lt "$nics" ]; do tapnames="$tapnames mvt$i"; i=$((i + 1)); done
	taps $tapnames || return 1
	mkdir -p $W/www
	dd if=/dev/urandom of=$W/www/data bs=1M count="$mib" 2>/dev/null
	local sent=$(sha256sum <$W/www/data | cut -d' ' -f1)
	httpd -p 10.0.2.1:8080 -h $W/www
	local netargs="" o
	for o in "$@"; do netargs="$netargs --net $o"; done
	l2_start $name 300 --memory 512M $netargs --api-sock $W/api.sock -- l2.nics=$nics l2.mib=$mib
	wait_out $name 'L2: WAITING' 240
	wget -q -O $W/got http://10.0.2.15:8080/data || fail "$name: wget from the guest"
	# The device lock's contention after both transfers (a count: what the vCPU threads'
	# register accesses and the I/O thread's data path cost each other in waits).
	minivmm ctl --sock $W/api.sock status >$W/$name.status 2>&1
	grep -q '"label":"virtio-net0",.*"lock":{"taken":[1-9][0-9]*,"contended":[0-9]*,"wait_us":[0-9]*,"hold_samples":[1-9][0-9]*,"hold_avg_ns":[1-9][0-9]*,"hold_max_ns":[1-9][0-9]*}' $W/$name.status ||
		fail "$name: no device lock counts in the status: $(cat $W/$name.status)"
	echo "$name device locks: $(grep -o '"label":"virtio-net[0-9]*"\|"lock":{[^}]*}' $W/$name.status | tr '\n' ' ')"
	echo "$name transmit and receive paths: $(grep -o '"[rt]x_path":"[^"]*"' $W/$name.status | tr '\n' ' ')"
	case "$*" in # tx-uring=on: the batches really went through the ring (not its fallback)
	*tx-uring=on*) grep -q '"tx_path":"io_uring"' $W/$name.status ||
		fail "$name: tx-uring=on, but $(grep -o '"tx_path":"[^"]*"' $W/$name.status)" ;;
	esac
	local got=$(sha256sum <$W/got | cut -d' ' -f1) got_bytes=$(wc -c <$W/got)
	finish $name
	killall httpd
	untaps $tapnames
	expect_no_fail $name && expect_status $name 0 || return 1
	[ "$got_bytes" = $((mib << 20)) ] || fail "$name: the test VM received $got_bytes bytes"
	expect_out $name "L2: got $sent bytes=$((mib << 20))" || return 1
	[ "$got" = "$(l2_value $name serving)" ] || fail "$name: the test VM received a different ${mib} MiB"
	[ "$(l2_value $name csum)" = "$csum" ] || fail "$name: VIRTIO_NET_F_CSUM is $(l2_value $name csum), want $csum"
	i=0
	while [ $i -lt "$nics" ]; do expect_out $name "L2: ping eth$i ok" || return 1; i=$((i + 1)); done
}

sc_net_pci() { net_scenario net 64 1 1 tap=mvt0; }
# mmio with the transmit batches through io_uring (tx-uring=on): Linux's TSO frames out, and
# the host's large (GSO) frames in, too.
sc_net_mmio() { net_scenario net 64 1 1 tap=mvt0,transport=mmio,tx-uring=on; }
sc_net_timer_nooffload() {
	net_scenario net 16 0 2 tap=mvt0,tx=timer,offload=off tap=mvt1,transport=mmio,tx=timer
}

# The user-mode backend: DHCP gives the guest its address; a hostfwd port reaches its listener.
sc_net_user() {
	l2_start user 120 --net user,hostfwd=tcp:127.0.0.1:5555-:7777 -- x
	wait_out user 'L2: WAITING' || return 1
	local reply=$(wget -q -O - http://127.0.0.1:5555/hello)
	finish user
	expect_no_fail user && expect_status user 0 && expect_out user 'L2: dhcp 10.0.2.15 router 10.0.2.2' || return 1
	[ "$reply" = HOSTFWD_OK ] || fail "hostfwd: got '$reply'"
}

# check_image IMAGE F1SUM: the guest's filesystem is clean and holds its files.
check_image() {
	/sbin/e2fsck -f -n "$1" >$W/fsck.log 2>&1 || { cat $W/fsck.log; fail "e2fsck -f -n found errors"; return 1; }
	mkdir -p $W/m
	mount -o loop,ro -t ext4 "$1" $W/m || { fail "cannot mount the image"; return 1; }
	local f1=$(sha256sum <$W/m/f1 | cut -d' ' -f1) f2=$(cat $W/m/f2)
	umount $W/m
	[ "$f1" = "$2" ] || fail "f1 on the image differs from what the guest wrote"
	[ "$f2" = hello-from-l2 ] || fail "f2 on the image is '$f2'"
}

# A filesystem made, written and synced by the guest, then a guest reboot; e2fsck and the files
# on the image afterwards. Over pci: cache=none on an ext4 (O_DIRECT), a read-only second disk,
# discard. Over mmio: cache=writeback.
sc_blk_pci() {
	mkdir -p $W/ext4
	truncate -s 256M $W/ext4.img && /sbin/mke2fs -q -t ext4 $W/ext4.img && mount -o loop $W/ext4.img $W/ext4 ||
		{ fail "cannot make an O_DIRECT-capable filesystem"; return 1; }
	truncate -s 64M $W/ext4/disk.img
	truncate -s 16M $W/ro.img
	l2 blk 180 --disk path=$W/ext4/disk.img,cache=none --disk path=$W/ro.img,readonly=on -- \
		l2.ro=vdb l2.trim=1 l2.end=reboot
	expect_no_fail blk && expect_status blk 0 && expect_out blk 'L2: vdb ro=1' &&
		expect_out blk 'L2: vdb write refused' && expect_out blk 'L2: trimmed' &&
		expect_out blk 'L2: disks=2' || { umount $W/ext4; return 1; }
	grep -q 'cache=none' $W/blk.err || fail "cache=none not in effect"
	local used=$(du -k $W/ext4/disk.img | cut -f1)
	check_image $W/ext4/disk.img "$(l2_value blk f1)"
	umount $W/ext4
	# 8 MiB of f1 plus the journal and metadata; the 24 MiB file fstrim discarded is gone.
	[ "$used" -lt $((20 * 1024)) ] || fail "the image still uses ${used} KiB after discard"
}

sc_blk_mmio() {
	truncate -s 64M $W/disk.img
	l2 blk 180 --disk path=$W/disk.img,transport=mmio -- l2.end=reboot
	expect_no_fail blk && expect_status blk 0 && expect_out blk 'L2: disks=1' || return 1
	check_image $W/disk.img "$(l2_value blk f1)"
}

# Root on a virtio-blk disk: the initramfs only loads Debian's modular virtio drivers, then
# switch_root runs /sbin/init from the ext4 image.
sc_rootfs() {
	/sbin/mke2fs -q -t ext4 -d /l2/rootfs $W/root.img 64M || { fail "cannot build the root image"; return 1; }
	l2 rootfs 120 --disk path=$W/root.img -- l2.root=/dev/vda
	expect_no_fail rootfs && expect_status rootfs 0 &&
		expect_out rootfs 'L2: root /dev/vda ext4 init=/bin/busybox'
}

# One rng on each transport; each must feed /dev/hwrng with incompressible bytes.
sc_rng() {
	l2 rng 90 --rng,transport=mmio --rng
	expect_no_fail rng && expect_status rng 0 || return 1
	[ "$(grep -c '^L2: rng virtio_rng' $W/rng.out)" = 2 ] || fail "the guest has not 2 virtio-rng devices"
	local n
	for n in $(sed -n 's/^L2: rng virtio_rng.* gz=\([0-9]*\).*/\1/p' $W/rng.out | tr -d '\r'); do
		[ "$n" -gt 65000 ] || fail "64 KiB from a virtio-rng compressed to $n bytes"
	done
}

# vmm_rss: minivmm's resident memory in KiB.
vmm_rss() { sed -n 's/^VmRSS:\s*\([0-9]*\) kB/\1/p' /proc/$VMM_PID/status; }

# wait_memfree NAME CMP KB: ask the guest for MemFree until it compares (-lt/-gt) with KB.
wait_memfree() {
	local i=0 v
	while [ $i -lt 60 ]; do
		send $1 'say "memfree=$(memfree)"'
		sleep 0.5
		v=$(l2_value $1 memfree)
		[ -n "$v" ] && [ "$v" "$2" "$3" ] && return 0
		i=$((i + 1))
	done
	fail "$1: guest MemFree stayed at $v kB (wanted $2 $3)"
}

sc_balloon() {
	l2_start balloon 180 --memory 512M --balloon,transport=$1 --api-sock $W/api.sock -- x
	wait_out balloon 'L2: WAITING' || return 1
	local free0=$(l2_value balloon memfree) rss0=$(vmm_rss)
	minivmm ctl --sock $W/api.sock balloon-set 256 >$W/ctl.log || fail "balloon-set 256"
	wait_memfree balloon -lt $((free0 - 200 * 1024)) || return 1
	local rss1=$(vmm_rss)
	minivmm ctl --sock $W/api.sock status >$W/status.json
	minivmm ctl --sock $W/api.sock balloon-set 0 >>$W/ctl.log || fail "balloon-set 0"
	wait_memfree balloon -gt $((free0 - 50 * 1024)) || return 1
	finish balloon
	expect_status balloon 0 || return 1
	[ "$rss1" -lt $((rss0 - 150 * 1024)) ] || fail "minivmm RSS ${rss0} -> ${rss1} kB after a 256 MiB inflate"
	grep -q '"free-memory"' $W/status.json || { cat $W/status.json; fail "status shows no guest statistics"; }
}
sc_balloon_pci() { sc_balloon pci; }
sc_balloon_mmio() { sc_balloon mmio; }

# virtiofsd on $W/share (the share's files made first) at $W/fs.sock; its pid in VIRTIOFSD_PID.
start_virtiofsd() {
	rm -rf $W/share $W/fs.sock
	mkdir -p $W/share
	echo hostfile >$W/share/hello
	dd if=/dev/urandom of=$W/share/big bs=1M count=4 2>/dev/null
	/usr/lib/qemu/virtiofsd --socket-path=$W/fs.sock -o source=$W/share -o cache=none \
		-o sandbox=chroot 2>$W/virtiofsd.err &
	VIRTIOFSD_PID=$!
}

# The guest mounts the host directory through Debian's virtiofsd and minivmm's vhost-user front
# end (guest-init.sh, fs): every byte read and written checked on the host, a change on the host
# seen in the guest; virtiofsd ends with the session.
fs_scenario() {
	local t=$1
	start_virtiofsd
	l2_start fs 180 --memory 256M --fs socket=$W/fs.sock,tag=hostshare,transport=$t -- x
	wait_out fs 'L2: WAITING' || { kill $VIRTIOFSD_PID 2>/dev/null; return 1; }
	echo changed-on-host >$W/share/hello
	send fs 'say "fs hello2=$(cat /mnt/fs/hello)"'
	wait_out fs 'hello2=' 30
	finish fs
	expect_status fs 0 && expect_no_fail fs || return 1
	[ "$(l2_value fs hello)" = hostfile ] || fail "fs: the guest read '$(l2_value fs hello)'"
	[ "$(l2_value fs big)" = "$(sha256sum <$W/share/big | cut -d' ' -f1)" ] ||
		fail "fs: the guest's sum of a 4 MiB host file differs"
	[ "$(l2_value fs wrote)" = "$(sha256sum <$W/share/renamed | cut -d' ' -f1)" ] ||
		fail "fs: the file the guest wrote and renamed differs on the host"
	[ ! -e $W/share/fromguest ] || fail "fs: the rename left the old name on the host"
	[ "$(l2_value fs unlinked_read)" = still-here ] && [ "$(l2_value fs unlinked_size)" = 11 ] ||
		fail "fs: an unlinked file was not readable through its descriptor"
	[ "$(l2_value fs missing)" = refused ] || fail "fs: a missing file was read"
	[ "$(l2_value fs hello2)" = changed-on-host ] || fail "fs: a change on the host was not seen"
	# virtiofsd serves one session: minivmm's end ends it.
	local i=0
	while kill -0 $VIRTIOFSD_PID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	kill -0 $VIRTIOFSD_PID 2>/dev/null && { kill -9 $VIRTIOFSD_PID; fail "fs: virtiofsd outlived minivmm"; }
	wait $VIRTIOFSD_PID 2>/dev/null
	grep -q 'needs reset' $W/fs.err && fail "fs: $(grep -m1 'needs reset' $W/fs.err)"
	return 0
}
sc_fs_pci() { fs_scenario pci; }
sc_fs_mmio() { fs_scenario mmio; }

# share_files: the host directory --share serves, as start_virtiofsd makes it.
share_files() {
	rm -rf $W/share
	mkdir -p $W/share
	echo hostfile >$W/share/hello
	dd if=/dev/urandom of=$W/share/big bs=1M count=4 2>/dev/null
}

# left_running: what --share must not leave behind once minivmm has returned.
left_running() {
	pidof virtiofsd >/dev/null && fail "share: virtiofsd still running: $(pidof virtiofsd)"
	ls -d /tmp/minivmm-share-* 2>/dev/null && fail "share: its socket directory is left"
	[ -z "$(ls /run/virtiofsd 2>/dev/null)" ] || fail "share: left $(ls /run/virtiofsd)"
	return 0
}

# --share DIR: minivmm starts virtiofsd itself and stops it with the VM; readonly=on keeps the
# guest from changing the directory; a minivmm killed with SIGKILL leaves nothing running.
sc_share() {
	share_files
	l2 share 180 --share $W/share,tag=hostshare,transport=mmio
	expect_status share 0 && expect_no_fail share || return 1
	[ "$(l2_value share big)" = "$(sha256sum <$W/share/big | cut -d' ' -f1)" ] ||
		fail "share: the guest's sum of a 4 MiB host file differs"
	[ -f $W/share/renamed ] || fail "share: the guest's file is not on the host"
	left_running || return 1
	share_files
	l2 share_ro 180 --share $W/share,tag=hostshare,readonly -- l2.fsro=1
	expect_status share_ro 0 && expect_no_fail share_ro || return 1
	[ "$(l2_value share_ro ro)" = refused ] || fail "share: no read-only check ran"
	[ "$(ls $W/share | tr '\n' ,)" = "big,hello," ] || fail "share: the read-only share changed: $(ls $W/share)"
	left_running || return 1
	l2_start share_kill 180 --share $W/share,tag=hostshare,readonly -- l2.fsro=1
	wait_out share_kill 'L2: WAITING' || return 1
	pidof virtiofsd >/dev/null || fail "share: no virtiofsd while the VM runs"
	kill -9 $VMM_PID
	wait "$VMM_JOB"
	exec 7>&-
	local i=0
	while pidof virtiofsd >/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	left_running || return 1
	# A virtiofsd that cannot serve: status 2, a line that says so, nothing left.
	l2 share_bad 60 --share $W/share --virtiofsd /bin/false
	expect_status share_bad 2 || return 1
	grep -q 'virtiofsd' $W/share_bad.err || fail "share: no line about virtiofsd: $(cat $W/share_bad.err)"
	left_running
}

# run_cmd NAME LIMIT ARGS...: minivmm run ARGS with stdout, stderr and status in $W/NAME.*.
run_cmd() {
	local name=$1 limit=$2 rc=0
	shift 2
	LAST=$name
	timeout -s KILL "$limit" minivmm run --kernel $L2_KERNEL --console file=$W/$name.kmsg "$@" \
		</dev/null >"$W/$name.out" 2>"$W/$name.err" || rc=$?
	echo $rc >"$W/$name.rc"
}
expect_run() {
	[ "$(status_of "$1")" = "$2" ] ||
		fail "$1: minivmm run exit status $(status_of "$1"), expected $2: $(tail -3 "$W/$1.err"); the guest kernel's last lines: $(tail -n 15 "$W/$1.kmsg" 2>/dev/null)"
}

# minivmm run (issue 38): the test VM's own root (its initramfs) and the L2 kernel's modules
# from its /lib/modules (build-images.sh), a command's streams apart and its status back, the
# host's files read and written, --timeout, a killed command, a panic; nothing left running.
sc_run() {
	cd $W
	echo from-host-cwd >$W/cwdfile
	rm -rf $W/out && mkdir -p $W/out
	run_cmd run_streams 120 -- /bin/sh -c 'echo out; echo err >&2; exit 7'
	expect_run run_streams 7
	[ "$(cat $W/run_streams.out)" = out ] || fail "run: stdout was '$(cat $W/run_streams.out)'"
	grep -qx err $W/run_streams.err || fail "run: no 'err' on stderr: $(cat $W/run_streams.err)"
	grep -qx out $W/run_streams.err && fail "run: stdout's line on stderr"
	run_cmd run_files 120 --share $W/out:/mnt/out -- /bin/sh -c \
		'cat cwdfile >/mnt/out/copy && echo guest >/etc/run-test && cat /etc/run-test'
	expect_run run_files 0
	[ "$(cat $W/out/copy 2>/dev/null)" = from-host-cwd ] || fail "run: the share has no copy of the cwd's file"
	[ "$(cat $W/run_files.out)" = guest ] || fail "run: the guest could not write its /etc"
	[ ! -e /etc/run-test ] || fail "run: a write to the guest's /etc reached the host"
	local t0=$(date +%s)
	run_cmd run_timeout 120 --timeout 20 -- sleep 1000
	expect_run run_timeout 124
	[ $(($(date +%s) - t0)) -lt 40 ] || fail "run: --timeout 20 took $(($(date +%s) - t0)) s"
	run_cmd run_killed 120 -- /bin/sh -c 'kill -9 $$'
	expect_run run_killed 137
	run_cmd run_panic 120 -- /bin/sh -c 'echo 1 >/proc/sys/kernel/sysrq; echo c >/proc/sysrq-trigger'
	expect_run run_panic 125
	grep -q 'ended before the command' $W/run_panic.err || fail "run: no line says why 125"
	pidof virtiofsd minivmm >/dev/null && fail "run: left running: $(pidof virtiofsd minivmm)"
	ls -d /tmp/minivmm-share-* 2>/dev/null && fail "run: a socket directory is left"
	cd /
	return 0
}

# virtiofsd killed under a running guest: the device needs reset (one line), the guest and
# minivmm go on, and minivmm exits cleanly later.
sc_fs_backend_dies() {
	start_virtiofsd
	l2_start fs 180 --fs socket=$W/fs.sock,tag=hostshare -- x
	wait_out fs 'L2: WAITING' || { kill $VIRTIOFSD_PID 2>/dev/null; return 1; }
	kill -9 $VIRTIOFSD_PID
	wait $VIRTIOFSD_PID 2>/dev/null
	local i=0
	while ! grep -q 'needs reset' $W/fs.err && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	send fs 'say "alive=yes"'
	wait_out fs 'alive=yes' 30
	# Without sync (-n): the guest's virtio-fs driver waits forever for requests the dead
	# back end took, as it would under any VMM.
	send fs "poweroff -n -f"
	wait "$VMM_JOB"
	exec 7>&-
	expect_status fs 0 || return 1
	[ "$(grep -c 'vhost-user back end closed its socket; device needs reset' $W/fs.err)" = 1 ] ||
		fail "fs: not one line for the back end's death: $(cat $W/fs.err)"
}

# qemu-storage-daemon exporting $W/vu.img (64 MiB, made here) as vhost-user-blk at $W/vu.sock;
# its pid in QSD_PID.
start_qsd() {
	rm -f $W/vu.img $W/vu.sock
	truncate -s 64M $W/vu.img
	qemu-storage-daemon --blockdev driver=file,node-name=file0,filename=$W/vu.img \
		--export type=vhost-user-blk,id=exp0,node-name=file0,addr.type=unix,addr.path=$W/vu.sock,writable=on \
		2>$W/qsd.err &
	QSD_PID=$!
}

stop_qsd() {
	kill $QSD_PID 2>/dev/null
	wait $QSD_PID 2>/dev/null
	return 0
}

# The guest's ordinary virtio-blk driver on a disk qemu-storage-daemon serves through minivmm's
# vhost-user front end (guest-init.sh, blk): an ext4 made, 8 MiB written, synced, a reboot;
# then, qemu-storage-daemon stopped, e2fsck -f -n and the files on the host's image.
vublk_scenario() {
	local t=$1
	start_qsd
	l2 blk 180 --disk vhost-user=$W/vu.sock,transport=$t -- l2.end=reboot
	stop_qsd
	expect_no_fail blk && expect_status blk 0 && expect_out blk 'L2: disks=1' || return 1
	grep -q "virtio-blk0: vhost-user back end at $W/vu.sock, 131072 sectors" $W/blk.err ||
		fail "vublk: no line for the back end's disk: $(cat $W/blk.err)"
	grep -q 'needs reset' $W/blk.err && fail "vublk: $(grep -m1 'needs reset' $W/blk.err)"
	check_image $W/vu.img "$(l2_value blk f1)"
}
sc_vublk_pci() { vublk_scenario pci; }
sc_vublk_mmio() { vublk_scenario mmio; }

# qemu-storage-daemon killed under a running guest that used the disk: one line says the
# device needs reset, the guest goes on, and minivmm exits cleanly later.
sc_vublk_backend_dies() {
	start_qsd
	l2_start blk 180 --disk vhost-user=$W/vu.sock -- x
	wait_out blk 'L2: WAITING' || { stop_qsd; return 1; }
	expect_out blk 'L2: disks=1' || { stop_qsd; return 1; }
	kill -9 $QSD_PID
	wait $QSD_PID 2>/dev/null
	local i=0
	while ! grep -q 'needs reset' $W/blk.err && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	send blk 'say "alive=yes"'
	wait_out blk 'alive=yes' 30
	send blk "poweroff -n -f"
	wait "$VMM_JOB"
	exec 7>&-
	expect_status blk 0 || return 1
	[ "$(grep -c 'virtio-blk0: vhost-user back end closed its socket; device needs reset' $W/blk.err)" = 1 ] ||
		fail "vublk: not one line for the back end's death: $(cat $W/blk.err)"
}

# Pause and resume while the guest pings: it carries on; then shutdown ends minivmm (status 0).
sc_control() {
	taps mvt0 || return 1
	l2_start ping 120 --net tap=mvt0 --api-sock $W/api.sock -- x
	wait_out ping 'bytes from' || { untaps mvt0; return 1; }
	minivmm ctl --sock $W/api.sock pause >$W/ctl.log || fail "pause"
	local n0=$(grep -c 'bytes from' $W/ping.out)
	minivmm ctl --sock $W/api.sock status >>$W/ctl.log
	minivmm ctl --sock $W/api.sock resume >>$W/ctl.log || fail "resume"
	local i=0
	while [ "$(grep -c 'bytes from' $W/ping.out)" -lt $((n0 + 3)) ] && [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1))
	done
	[ $i -lt 300 ] || fail "no replies after resume"
	minivmm ctl --sock $W/api.sock shutdown >>$W/ctl.log || fail "shutdown"
	wait "$VMM_JOB"
	exec 7>&-
	untaps mvt0
	grep -q paused $W/ctl.log || fail "status did not report the pause"
	# The guest's console is a port-I/O UART: exits counted by reason; the ping moved packets.
	grep -q '"exits":{"io":[1-9][0-9]*,"mmio":[0-9]*,"hlt":[0-9]*,"other":[0-9]*}' $W/ctl.log ||
		fail "status counted no port I/O exits: $(cat $W/ctl.log)"
	grep -q '"kicks":[1-9][0-9]*,"wakeups":[1-9][0-9]*,"interrupts":[1-9]' $W/ctl.log ||
		fail "status counted no kicks, wake-ups or interrupts: $(cat $W/ctl.log)"
	expect_status ping 0
}

# The probe's own tests in L1, where they take the hardware-KVM path (no PVM interface).
sc_probe() {
	local rc=0
	timeout -s KILL 60 minivmm --kernel /probe/probe.bzImage --cpus 2 \
		--cmdline "test=boot expect.cpus=2 expect.mem=256M" >$W/probe.out 2>$W/probe.err || rc=$?
	echo $rc >$W/probe.rc
	expect_status probe 0 && expect_out probe '^probe: PASS' || return 1
	truncate -s 64M $W/disk.img
	rc=0
	timeout -s KILL 120 minivmm --kernel /probe/probe.elf --disk path=$W/disk.img,transport=mmio \
		--rng --cmdline "test=blk blk.secs=1" >$W/probe.out 2>$W/probe.err || rc=$?
	echo $rc >$W/probe.rc
	expect_status probe 0 && expect_out probe '^probe: PASS'
}

# The probe's virtio-blk test (test=blk: random reads, sequential reads and writes with a FLUSH,
# every block checked) on a disk Debian's qemu-storage-daemon serves through minivmm's
# vhost-user front end, on each transport.
sc_probe_vublk() {
	local t rc
	for t in pci mmio; do
		start_qsd
		rc=0
		timeout -s KILL 120 minivmm --kernel /probe/probe.elf --memory 256M \
			--disk vhost-user=$W/vu.sock,transport=$t \
			--cmdline "test=blk blk.expect=1 blk.bytes=16M blk.secs=1" \
			>$W/probe_vublk_$t.out 2>$W/probe_vublk_$t.err || rc=$?
		echo $rc >$W/probe_vublk_$t.rc
		stop_qsd
		expect_status probe_vublk_$t 0 && expect_out probe_vublk_$t '^probe: PASS' || return 1
	done
}

# The probe's virtio-fs driver (test=fs) against Debian's virtiofsd through minivmm's vhost-user
# front end, on each transport: a host file whose size is no multiple of the probe's reads, read
# whole and its CRC-32 checked, the root's listing, a missing name refused with ENOENT.
sc_probe_fs() {
	local t rc size=$((3 * 1048576 + 12345)) crc i
	for t in pci mmio; do
		start_virtiofsd
		head -c $size /dev/urandom >$W/share/probe.bin
		crc=$(gzip -c $W/share/probe.bin | tail -c8 | od -An -tx4 -N4 | tr -d ' ')
		rc=0
		timeout -s KILL 120 minivmm --kernel /probe/probe.elf --memory 256M \
			--fs socket=$W/fs.sock,tag=probefs,transport=$t --cmdline "test=fs fs.tag=probefs \
fs.file=probe.bin fs.size=$size fs.crc32=$crc fs.getattrs=1000" >$W/probe_fs_$t.out \
			2>$W/probe_fs_$t.err || rc=$?
		echo $rc >$W/probe_fs_$t.rc
		i=0
		while kill -0 $VIRTIOFSD_PID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -0 $VIRTIOFSD_PID 2>/dev/null && { kill -9 $VIRTIOFSD_PID; fail "probe_fs_$t: virtiofsd outlived minivmm"; }
		wait $VIRTIOFSD_PID 2>/dev/null
		expect_status probe_fs_$t 0 && expect_out probe_fs_$t '^probe: PASS' || return 1
		expect_out probe_fs_$t "^probe: fs devices=1 transport=$t tag=probefs request_queues=1"
		expect_out probe_fs_$t '^probe: fs lookup missing error=2$'
		expect_out probe_fs_$t "^probe: fs read bytes=$size .* crc32=$crc"
		expect_out probe_fs_$t '^probe: fs readdir entries=[0-9]* found=1'
		expect_out probe_fs_$t '^probe: fs getattr ops=1000 '
	done
}

# The probe's virtio-console driver (test=console) on each transport: 1 MiB of its pattern
# (console.seed=1) through a named port (the MULTIPORT handshake), the port's host file of
# exactly that many bytes, its CRC-32 the probe's and the pattern's (c0f68319, computed on the
# host by tests/integration/console_pattern.py).
sc_probe_console() {
	local t rc crc want=c0f68319
	for t in pci mmio; do
		rm -f $W/probe_console_$t.data
		rc=0
		timeout -s KILL 120 minivmm --kernel /probe/probe.elf --memory 256M \
			--console virtio,transport=$t --vport probe.data:file=$W/probe_console_$t.data \
			--cmdline "test=console console.seed=1" >$W/probe_console_$t.out \
			2>$W/probe_console_$t.err || rc=$?
		echo $rc >$W/probe_console_$t.rc
		expect_status probe_console_$t 0 && expect_out probe_console_$t '^probe: PASS' || return 1
		expect_out probe_console_$t "^probe: console devices=1 transport=$t multiport=1 max_nr_ports=2"
		expect_out probe_console_$t '^probe: console port=1 name=probe.data'
		expect_out probe_console_$t "^probe: console bytes=1048576 crc32=$want "
		[ "$(stat -c %s $W/probe_console_$t.data)" = 1048576 ] ||
			fail "probe_console_$t: the port's file has $(stat -c %s $W/probe_console_$t.data) bytes, not 1048576"
		crc=$(gzip -c $W/probe_console_$t.data | tail -c8 | od -An -tx4 -N4 | tr -d ' ')
		[ "$crc" = $want ] || fail "probe_console_$t: the port's file has CRC-32 $crc, not $want"
	done
}

# counters NAME...: the probe's counter values on those consoles, joined (test=counter).
counters() { for f in "$@"; do cat "$W/$f.out"; done | tr -d '\r' | sed -n 's/^probe: counter=\([0-9]*\) .*/\1/p' | tr '\n' ' '; }

# restored_ok NAME: the original console then NAME's hold every counter 1..25 exactly once, one
# RAM checksum, no second banner, and NAME passed.
restored_ok() {
	expect_status "$1" 0 && expect_out "$1" '^probe: PASS' || return 1
	expect_out "$1" '^probe: counter blk verified=25'
	! grep '^probe: counter=' "$W/$1.out" | grep -v -q 'blk=ok' || fail "$1: a disk write failed"
	! grep -q 'minivmm probe v1' "$W/$1.out" || fail "$1: the restored guest booted again"
	[ "$(counters orig "$1")" = "$(seq 1 25 | tr '\n' ' ')" ] ||
		fail "$1: counters $(counters orig "$1"), expected 1 to 25 once each"
	[ "$(cat "$W/orig.out" "$W/$1.out" | grep -o 'crc32=[0-9a-f]*' | sort -u | wc -l)" = 1 ] ||
		fail "$1: the RAM checksum changed"
	! grep '^probe: counter=' "$W/$1.out" | grep -v -q 'rng_bytes=8192' ||
		fail "$1: a restored rng device stopped serving: $(grep -m1 -v 'rng_bytes=8192' "$W/$1.out")"
}

# bad_restore NAME PATTERN DIR [ARGS...]: --restore DIR [ARGS] is refused, status 2, one line
# naming PATTERN.
bad_restore() {
	local rc=0 name=$1 pattern=$2
	shift 2
	minivmm --restore "$@" >"$W/$name.out" 2>"$W/$name.err" || rc=$?
	set -- "$name" "$pattern"
	echo $rc >"$W/$1.rc"
	expect_status "$1" 2
	[ "$(wc -l <"$W/$1.err")" = 1 ] && grep -q -- "$2" "$W/$1.err" ||
		fail "$1: expected one line with '$2', got: $(cat "$W/$1.err")"
}

# Snapshot and restore (issue 21) of a counting probe with 2 vCPUs (both count), two rng
# devices (pci and mmio, read on every counter line) and a disk (a 64 KiB block written and read
# back on every line, all of them checked at the end: no write lost): saved through
# the control socket, killed, then restored twice from the same snapshot (once --paused, resumed
# by the socket, and saved again while paused, which restores the same); each restored guest
# carries on where the original stopped. Damaged and foreign
# snapshots are refused with status 2.
sc_snapshot() {
	truncate -s 16M $W/disk.img
	(
		rc=0
		timeout -s KILL 120 minivmm --kernel /probe/probe.bzImage --cpus 2 --memory 32M \
			--rng --rng,transport=mmio --disk path=$W/disk.img --api-sock $W/api.sock \
			--cmdline "test=counter counter.ms=200 counter.max=25 counter.rng=1 counter.blk=1" \
			</dev/null >$W/orig.out 2>$W/orig.err || rc=$?
		echo $rc >$W/orig.rc
	) &
	local job=$!
	wait_out orig '^probe: counter=3 ' 90 || return 1
	grep -q '^probe: counter start cpus=2 rng=2 blk=1 ' $W/orig.out || fail "the probe did not find its devices"
	minivmm ctl --sock $W/api.sock snapshot $W/snap >$W/ctl.log 2>&1 || fail "snapshot: $(cat $W/ctl.log)"
	minivmm ctl --sock $W/api.sock status >>$W/ctl.log 2>&1
	grep -q '"state":"paused"' $W/ctl.log || fail "the VM is not paused after the snapshot"
	kill -KILL "$(pidof minivmm)"
	wait $job
	[ -f $W/snap/snapshot.json ] || { fail "no snapshot written: $(cat $W/ctl.log)"; return 1; }
	echo "snapshot: $(du -k $W/snap/memory | cut -f1) KiB of memory on disk for 32 MiB RAM, state $(wc -c <$W/snap/state.bin) bytes, saved at counter $(counters orig | awk '{print $NF}')"
	local rc=0
	! grep -qF $W/disk.img $W/snap/state.bin || fail "state.bin names the disk's image"
	timeout -s KILL 120 minivmm --restore $W/snap --backend 2:path=$W/disk.img </dev/null >$W/r1.out 2>$W/r1.err || rc=$?
	echo $rc >$W/r1.rc
	restored_ok r1
	grep 'restored' $W/r1.err
	(
		rc=0
		timeout -s KILL 120 minivmm --restore $W/snap --backend 2:path=$W/disk.img --paused --api-sock $W/api2.sock \
			</dev/null >$W/r2.out 2>$W/r2.err || rc=$?
		echo $rc >$W/r2.rc
	) &
	job=$!
	local i=0
	while ! grep -q 'restored' $W/r2.err 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	minivmm ctl --sock $W/api2.sock status >$W/ctl2.log 2>&1
	grep -q '"state":"paused"' $W/ctl2.log || fail "--paused: not paused: $(cat $W/ctl2.log)"
	[ ! -s $W/r2.out ] || fail "--paused: the guest ran before resume"
	# A restored VM is saved again (still paused: the same point), and that snapshot restores.
	minivmm ctl --sock $W/api2.sock snapshot $W/snap2 >>$W/ctl2.log 2>&1 || fail "snapshot of a restored VM"
	minivmm ctl --sock $W/api2.sock resume >>$W/ctl2.log 2>&1 || fail "resume"
	wait $job
	restored_ok r2
	rc=0
	timeout -s KILL 120 minivmm --restore $W/snap2 --backend 2:path=$W/disk.img </dev/null >$W/r3.out 2>$W/r3.err || rc=$?
	echo $rc >$W/r3.rc
	restored_ok r3
	mkdir $W/empty
	bad_restore missing 'No such file' $W/nothing
	bad_restore notsnap 'not a minivmm snapshot' $W/empty
	cp -r $W/snap $W/v1 && sed -i 's/"version":2/"version":1/' $W/v1/snapshot.json
	bad_restore version 'version 1' $W/v1
	cp -r $W/snap $W/flip && printf '\377' | dd of=$W/flip/state.bin bs=1 seek=200 conv=notrunc 2>/dev/null
	bad_restore flipped 'checksum' $W/flip
	rm -rf $W/v1 $W/flip
	cp -r $W/snap $W/short && truncate -s 16M $W/short/memory
	bad_restore truncated 'truncated' $W/short
	truncate -s 32M $W/disk.img
	bad_restore no-backend 'device 2 is a --disk: give what it uses on the host with --backend 2:' $W/snap
	bad_restore disk-size 'the image has 65536 sectors, the snapshot 32768' $W/snap --backend 2:path=$W/disk.img
	[ ! -f $W/.failed ]
}

# answer NAME ARGS...: minivmm ARGS under /probe/first-byte, which sends a datagram to
# 127.0.0.1:7001 every 0.5 ms until one is echoed, then kills it (--stop); fails unless an
# answer came (answer_us >= 0). Console in $W/NAME.out, first-byte's lines in $W/NAME.fb.
answer() {
	local name=$1
	shift
	/probe/first-byte --udp 127.0.0.1:7001 --stop --timeout 120 --out "$W/$name.out" \
		--err "$W/$name.err" -- minivmm "$@" >"$W/$name.fb" 2>&1
	grep -q '^answer_us=[0-9]' "$W/$name.fb" || { fail "$name: no echo: $(cat "$W/$name.fb")"; return 1; }
	echo "$name: $(tr '\n' ' ' <"$W/$name.fb")"
}

# Snapshot and restore (issue 21) of the user-mode backend: the probe's UDP echo service behind
# a hostfwd rule answers first-byte's datagrams (as bench-snapshot.sh --net times them) booted
# cold, and restored, twice from one snapshot: each restore a fresh libslirp stack with the
# forward given again with --backend (a snapshot names none).
sc_snapshot_user() {
	local net=user,hostfwd=udp:127.0.0.1:7001-:7000 r
	local guest="test=serve net.ip=10.0.2.15/24 net.peer=10.0.2.2 net.port=7000"
	answer cold --kernel /probe/probe.elf --memory 64M --net $net --cmdline "$guest" || return 1
	probe_bg u --kernel /probe/probe.elf --memory 64M --net $net --api-sock $W/u.sock --cmdline "$guest"
	wait_out u '^probe: serve ready' 60 || return 1
	save_and_kill u $W/u.sock $W/snap-u || return 1
	for r in r1 r2; do
		answer $r --restore $W/snap-u --backend 0:$net || return 1
		grep -q 'restored' $W/$r.err || fail "$r: no restore reported: $(cat $W/$r.err)"
		! grep -q 'minivmm probe v1' $W/$r.out || fail "$r: the restored guest booted again"
	done
	[ ! -f $W/.failed ]
}

# Snapshot and restore (issue 21) of RAM above 4 GiB: a counting probe with 3200 MiB (3 GiB
# below the PCI hole, 128 MiB from 4 GiB up) keeps its pattern in the last MiB of that high
# RAM (counter.high=1); saved, killed and restored, it finds the same checksum there and counts
# on. The memory file is RAM byte for byte with holes: it stays small on disk.
sc_snapshot_high() {
	probe_bg hi --kernel /probe/probe.elf --memory 3200M --api-sock $W/hi.sock \
		--cmdline "test=counter counter.ms=200 counter.max=12 counter.high=1"
	wait_out hi '^probe: counter=3 ' 90 || return 1
	grep -q '^probe: counter start cpus=1 .* pattern=0x107f00000' $W/hi.out ||
		fail "the pattern is not in the last MiB above 4 GiB: $(grep 'counter start' $W/hi.out)"
	save_and_kill hi $W/hi.sock $W/snap-hi || return 1
	[ "$(stat -c %s $W/snap-hi/memory)" = $((3200 << 20)) ] || fail "memory file size $(stat -c %s $W/snap-hi/memory)"
	echo "snapshot: $(du -k $W/snap-hi/memory | cut -f1) KiB on disk for 3200 MiB of RAM"
	mv $W/hi.out $W/orig.out
	local rc=0
	timeout -s KILL 150 minivmm --restore $W/snap-hi </dev/null >$W/rhi.out 2>$W/rhi.err || rc=$?
	echo $rc >$W/rhi.rc
	expect_status rhi 0 && expect_out rhi '^probe: PASS' || return 1
	! grep -q 'minivmm probe v1' $W/rhi.out || fail "rhi: the restored guest booted again"
	[ "$(counters orig rhi)" = "$(seq 1 12 | tr '\n' ' ')" ] ||
		fail "rhi: counters $(counters orig rhi), expected 1 to 12 once each"
	[ "$(cat $W/orig.out $W/rhi.out | grep -o 'crc32=[0-9a-f]*' | sort -u | wc -l)" = 1 ] ||
		fail "rhi: the checksum of the RAM above 4 GiB changed"
	# The counter's own check that the other vCPUs run (what a restore must keep): APs that
	# stop after line 3 fail it, though they stopped for good only near the end.
	rc=0
	timeout -s KILL 150 minivmm --kernel /probe/probe.elf --cpus 2 --memory 32M \
		--cmdline "test=counter counter.ms=100 counter.max=9 counter.ap_stop=7" </dev/null >$W/stop.out 2>$W/stop.err || rc=$?
	echo $rc >$W/stop.rc
	[ "$(status_of stop)" != 0 ] && expect_out stop '^probe: FAIL the other CPUs stopped counting' ||
		fail "stop: APs that stopped counting went unnoticed"
	[ ! -f $W/.failed ]
}

# probe_bg NAME ARGS...: minivmm (ARGS: --kernel or --restore and the rest) in the background,
# console in $W/NAME.out, exit status in $W/NAME.rc once it ends (BG_JOB).
probe_bg() {
	local name=$1
	shift
	(
		rc=0
		timeout -s KILL 150 minivmm "$@" </dev/null >"$W/$name.out" 2>"$W/$name.err" || rc=$?
		echo $rc >"$W/$name.rc"
	) &
	BG_JOB=$!
}

# save_and_kill NAME SOCK DIR: snapshot the background VM into DIR, then kill it.
save_and_kill() {
	minivmm ctl --sock "$2" snapshot "$3" >"$W/$1.ctl" 2>&1 || { fail "$1: snapshot: $(cat "$W/$1.ctl")"; return 1; }
	kill -KILL "$(pidof minivmm)"
	wait $BG_JOB
}

# json_num FILE KEY: the first integer value of KEY in a status answer.
json_num() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1"; }

# Snapshot and restore (issue 21) of --balloon and --net devices, on TRANSPORT. Balloon: the
# probe follows the target (test=balloon); inflated to 8 MiB, saved, killed, restored: the
# restored device reports the saved target and released pages, balloon-set 16 inflates the
# restored guest's balloon, balloon-set 0 deflates it and the probe passes. Net: the probe
# answers ping (test=serve) on a tap; saved, killed, restored, it answers again: over mmio on
# the same tap, over pci on another tap (mvt0 deleted, mvt1 with its address and MAC) given
# with --backend 0:tap=mvt1 (the first with --backend 0:tap=mvt0: a snapshot names no tap).
snapshot_devices() {
	local t=$1 i=0
	probe_bg b-$t --kernel /probe/probe.elf --memory 64M --balloon,transport=$t \
		--api-sock $W/b-$t.sock --cmdline "test=balloon balloon.touch_mib=16 balloon.timeout=140"
	wait_out b-$t '^probe: balloon ready' 60 || return 1
	minivmm ctl --sock $W/b-$t.sock balloon-set 8 >$W/b.ctl || fail "b-$t: balloon-set 8"
	wait_out b-$t '^probe: balloon actual_pages=2048' 60 || return 1
	save_and_kill b-$t $W/b-$t.sock $W/snap-b-$t || return 1
	probe_bg rb-$t --restore $W/snap-b-$t --api-sock $W/rb-$t.sock
	while ! grep -q 'restored' $W/rb-$t.err 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	minivmm ctl --sock $W/rb-$t.sock status >$W/rb.status 2>&1
	[ "$(json_num $W/rb.status target_pages)" = 2048 ] && [ "$(json_num $W/rb.status released_pages)" = 2048 ] ||
		fail "rb-$t: the balloon's saved state is not back: $(cat $W/rb.status)"
	minivmm ctl --sock $W/rb-$t.sock balloon-set 16 >$W/rb.ctl || fail "rb-$t: balloon-set 16"
	wait_out rb-$t '^probe: balloon actual_pages=4096' 60 || return 1
	minivmm ctl --sock $W/rb-$t.sock balloon-set 0 >>$W/rb.ctl || fail "rb-$t: balloon-set 0"
	wait $BG_JOB
	expect_status rb-$t 0 && expect_out rb-$t '^probe: balloon deflated ok' && expect_out rb-$t '^probe: PASS' || return 1
	! grep -q 'minivmm probe v1' $W/rb-$t.out || fail "rb-$t: the restored guest booted again"

	taps mvt0 || return 1
	probe_bg n-$t --kernel /probe/probe.elf --net tap=mvt0,transport=$t --api-sock $W/n-$t.sock \
		--cmdline "test=serve net.ip=10.0.2.15/24 net.peer=10.0.2.1"
	wait_out n-$t '^probe: serve ready' 60 || return 1
	ping -c 3 -W 2 10.0.2.15 >$W/n-$t.ping 2>&1 || fail "n-$t: no ping answer: $(cat $W/n-$t.ping)"
	save_and_kill n-$t $W/n-$t.sock $W/snap-n-$t || return 1
	local backend="--backend 0:tap=mvt0"
	if [ $t = pci ]; then
		local mac=$(cat /sys/class/net/mvt0/address)
		untaps mvt0
		taps mvt1 || return 1
		ip link set dev mvt1 address "$mac" || fail "cannot give mvt1 the MAC $mac"
		backend="--backend 0:tap=mvt1"
	fi
	probe_bg rn-$t --restore $W/snap-n-$t $backend --api-sock $W/rn-$t.sock
	i=0
	while ! grep -q 'restored' $W/rn-$t.err 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	ping -c 3 -W 2 10.0.2.15 >$W/rn-$t.ping 2>&1 || fail "rn-$t: no ping answer after the restore: $(cat $W/rn-$t.ping)"
	minivmm ctl --sock $W/rn-$t.sock shutdown >$W/rn.ctl 2>&1 || fail "rn-$t: shutdown"
	wait $BG_JOB
	expect_status rn-$t 0
	! grep -q 'minivmm probe v1' $W/rn-$t.out || fail "rn-$t: the restored guest booted again"
	untaps mvt0 mvt1
	[ ! -f $W/.failed ]
}
sc_snapshot_devices() { snapshot_devices mmio && snapshot_devices pci; }

# l2_restore NAME DIR [minivmm args...]: minivmm --restore DIR in the background, as l2_start
# (console in $W/NAME.out, stdin the FIFO $W/NAME.in that send writes to, VMM_JOB, VMM_PID),
# once the previous VM is gone; returns when stderr reports the restore (fails if it ends first).
l2_restore() {
	local name=$1 dir=$2 i=0
	shift 2
	LAST=$name
	exec 7>&-
	mkfifo "$W/$name.in"
	exec 7<>"$W/$name.in"
	(
		rc=0
		timeout -s KILL 180 minivmm --restore "$dir" "$@" <"$W/$name.in" \
			>"$W/$name.out" 2>"$W/$name.err" || rc=$?
		echo $rc >"$W/$name.rc"
	) &
	VMM_JOB=$!
	while ! grep -q 'restored' "$W/$name.err" 2>/dev/null; do
		[ -f "$W/$name.rc" ] && { fail "$name: minivmm --restore ended (status $(cat "$W/$name.rc")): $(cat "$W/$name.err")"; return 1; }
		[ $i -ge 600 ] && { fail "$name: not restored within 60s"; return 1; }
		sleep 0.1
		i=$((i + 1))
	done
	VMM_PID=$(pidof minivmm)
}

# wait_balloon SOCK PAGES: until the balloon's status shows the driver's actual_pages=PAGES.
wait_balloon() {
	local i=0
	while [ $i -lt 120 ]; do
		minivmm ctl --sock "$1" status >$W/balloon.status 2>&1
		[ "$(json_num $W/balloon.status actual_pages)" = "$2" ] && return 0
		sleep 0.5
		i=$((i + 1))
	done
	fail "the balloon's actual_pages stayed at $(json_num $W/balloon.status actual_pages), wanted $2: $(cat $W/balloon.status)"
}

# Stock Linux saved and restored (issue 21). A guest with 2 vCPUs, an rng (mmio), a balloon, an
# ext4 disk the test VM made and a tap (pci) has 64 MiB in its balloon, writes f1 (synced) and
# f2 (left to writeback) to the disk and reads its clocks; it is saved, killed and restored
# from the snapshot. The restored guest (not booted again) answers a shell line; its clocks did
# not go back, nor forward by more than the time that passed in the test VM; it pings the test
# VM and the test VM pings it; it reads both files back from the disk (caches dropped); its rng
# gives incompressible bytes; its balloon has the saved 64 MiB and follows balloon-set 256 and
# 0 through the restored VM's socket; it unmounts the disk and powers off (status 0). Then
# e2fsck -f -n of the image passes in the test VM, and both files on it are as written.
sc_snapshot_linux() {
	truncate -s 64M $W/disk.img && /sbin/mke2fs -q -t ext4 $W/disk.img ||
		{ fail "cannot make the ext4 image"; return 1; }
	taps mvt0 || return 1
	l2_start snapshot 180 --cpus 2 --memory 512M --rng,transport=mmio --balloon \
		--disk path=$W/disk.img --net tap=mvt0 --api-sock $W/orig.sock -- x
	wait_out snapshot 'L2: WAITING' 120 || return 1
	expect_no_fail snapshot && expect_out snapshot 'L2: rng virtio_rng' || return 1
	minivmm ctl --sock $W/orig.sock balloon-set 64 >$W/ctl.log 2>&1 || fail "balloon-set 64: $(cat $W/ctl.log)"
	wait_balloon $W/orig.sock 16384 || return 1
	send snapshot 'dd if=/dev/urandom of=/mnt/f1 bs=1M count=4 2>/dev/null; sync; dd if=/dev/urandom of=/mnt/f2 bs=1M count=1 2>/dev/null; sums wrote; clocks before'
	wait_out snapshot 'L2: before ' 60 || return 1
	local t0=$(date +%s)
	timeout 120 minivmm ctl --sock $W/orig.sock snapshot $W/snap >>$W/ctl.log 2>&1 ||
		{ fail "snapshot: $(cat $W/ctl.log)"; return 1; }
	kill -KILL "$VMM_PID"
	wait "$VMM_JOB"
	echo "snapshot: $(du -k $W/snap/memory | cut -f1) KiB of memory on disk for 512 MiB RAM; $(grep -o 'snapshot written.*' $W/snapshot.err)"
	l2_restore restored $W/snap --backend 2:path=$W/disk.img --backend 3:tap=mvt0 \
		--api-sock $W/restored.sock || return 1
	grep 'restored' $W/restored.err

	# The shell answers, and the clocks carry on from the save.
	send restored 'say "answer=$((6 * 7))"'
	wait_out restored 'L2: answer=42' 60 || return 1
	send restored 'clocks after'
	wait_out restored 'L2: after ' 30 || return 1
	local real=$(($(date +%s) - t0))
	local ub=$(l2_value snapshot up_cs) ua=$(l2_value restored up_cs)
	local db=$(l2_value snapshot date_s) da=$(l2_value restored date_s)
	echo "clocks: uptime ${ub} -> ${ua} cs, date ${db} -> ${da} s, ${real} s passed in the test VM"
	[ "$ua" -ge "$ub" ] || fail "CLOCK_MONOTONIC went back across the restore: uptime ${ub} -> ${ua} cs"
	[ "$da" -ge "$db" ] || fail "CLOCK_REALTIME went back across the restore: ${db} -> ${da} s"
	[ $((ua - ub)) -le $(((real + 10) * 100)) ] ||
		fail "CLOCK_MONOTONIC jumped forward: uptime ${ub} -> ${ua} cs in ${real} s"
	[ $((da - db)) -le $((real + 10)) ] || fail "CLOCK_REALTIME jumped forward: ${db} -> ${da} s in ${real} s"

	# The tap both ways.
	send restored 'ping -c 3 -W 5 10.0.2.1 >/dev/null && say "ping after ok" || say "FAIL ping after the restore"'
	wait_out restored 'L2: .*ping after' 60 || return 1
	expect_out restored 'L2: ping after ok' || return 1
	ping -c 3 -W 2 10.0.2.15 >$W/ping.log 2>&1 ||
		fail "no ping answer from the restored guest: $(tail -n 2 $W/ping.log)"

	# The files from the disk itself, not the page cache.
	send restored 'sync; echo 3 >/proc/sys/vm/drop_caches; sums read'
	wait_out restored 'L2: read ' 60 || return 1
	local f1=$(l2_value snapshot f1) f2=$(l2_value snapshot f2)
	[ -n "$f1" ] && [ "$(l2_value restored f1)" = "$f1" ] || fail "f1 read back after the restore differs"
	[ -n "$f2" ] && [ "$(l2_value restored f2)" = "$f2" ] ||
		fail "f2 (unsynced at the save) read back after the restore differs"

	# 64 KiB from the restored rng (30 s at most) does not compress.
	send restored 'say "rng after $(cat /sys/class/misc/hw_random/rng_current) gz=$(timeout 30 head -c 65536 /dev/hwrng | gzip -c | wc -c)"'
	wait_out restored 'L2: rng after' 60 || return 1
	expect_out restored 'L2: rng after virtio_rng' || return 1
	local gz=$(l2_value restored gz)
	[ "${gz:-0}" -gt 65000 ] || fail "64 KiB from the restored virtio-rng compressed to ${gz} bytes (short or patterned)"

	# The balloon as saved, then inflated further and deflated through the restored VM's socket.
	minivmm ctl --sock $W/restored.sock status >$W/restored.status 2>&1
	[ "$(json_num $W/restored.status target_pages)" = 16384 ] &&
		[ "$(json_num $W/restored.status actual_pages)" = 16384 ] ||
		fail "the balloon's saved 64 MiB is not back: $(cat $W/restored.status)"
	send restored 'say "memfree=$(memfree)"'
	wait_out restored 'L2: memfree=' 30 || return 1
	local free1=$(l2_value restored memfree)
	minivmm ctl --sock $W/restored.sock balloon-set 256 >>$W/ctl.log 2>&1 || fail "balloon-set 256 on the restored VM"
	wait_memfree restored -lt $((free1 - 150 * 1024)) && wait_balloon $W/restored.sock 65536 || return 1
	minivmm ctl --sock $W/restored.sock balloon-set 0 >>$W/ctl.log 2>&1 || fail "balloon-set 0 on the restored VM"
	# Deflated to 0: the 64 MiB inflated before the save come back too.
	wait_memfree restored -gt $((free1 + 32 * 1024)) && wait_balloon $W/restored.sock 0 || return 1

	# A clean shutdown, then the image in the test VM.
	send restored 'umount /mnt && say "umounted" || say "FAIL umount /mnt"'
	wait_out restored 'L2: .*umount' 60 || return 1
	finish restored
	untaps mvt0
	expect_no_fail snapshot && expect_no_fail restored && expect_status restored 0 || return 1
	! grep -q 'L2: BOOTED' $W/restored.out || fail "the restored guest booted again"
	/sbin/e2fsck -f -n $W/disk.img >$W/fsck.log 2>&1 ||
		{ cat $W/fsck.log; fail "e2fsck -f -n found errors after the restored guest's shutdown"; return 1; }
	mkdir -p $W/m
	mount -o loop,ro -t ext4 $W/disk.img $W/m || { fail "cannot mount the image"; return 1; }
	local i1=$(sha256sum <$W/m/f1 | cut -d' ' -f1) i2=$(sha256sum <$W/m/f2 | cut -d' ' -f1)
	umount $W/m
	[ "$i1" = "$f1" ] || fail "f1 on the image differs from what the guest wrote"
	[ "$i2" = "$f2" ] || fail "f2 on the image differs from what the guest wrote"
}

# The start-up floor's four-instruction guest (examples/tiny-guest.S) under minivmm --timing and
# under examples/startup-floor: its byte out, its exit value, a complete timing line each.
sc_startup() {
	local rc=0
	timeout -s KILL 60 minivmm --kernel /probe/tiny-guest.elf --memory 64M --timing \
		>$W/startup.out 2>$W/startup.err || rc=$?
	echo $rc >$W/startup.rc
	expect_status startup 33 && expect_out startup '!' || return 1
	grep -q '^minivmm: startup-us: exec=- args=[0-9]*\.[0-9]\{3\} .* guest=[0-9]*\.[0-9]\{3\} total=[0-9]*\.[0-9]\{3\} from=main first_byte=yes$' \
		$W/startup.err || { fail "startup: no complete timing line"; return 1; }
	grep 'startup-us' $W/startup.err
	rc=0
	timeout -s KILL 60 /probe/startup-floor >$W/floor.out 2>$W/floor.err || rc=$?
	echo $rc >$W/floor.rc
	expect_status floor 33 && expect_out floor '!' || return 1
	grep -q '^startup-floor: startup-us: exec=- kvm=.* guest=[0-9]*\.[0-9]\{3\} total=.* first_byte=yes$' \
		$W/floor.err || { fail "floor: no complete timing line"; return 1; }
	grep 'startup-us' $W/floor.err
}

# uring_used NAME: minivmm (tx-uring=on) transmitted in batches through io_uring, no fallback.
uring_used() {
	grep -q 'io_uring, batched' $W/$1.err && ! grep -q 'transmitting with writev' $W/$1.err ||
		fail "$1: tx-uring=on, but: $(grep -m1 'tx=\|io_uring' $W/$1.err)"
}

# probe_run NAME TEST WORDS...: the probe under minivmm on the tap mvt0 (pci; PROBE_NET, if set,
# is the whole --net), in the background; console in $W/NAME.out, exit status in $W/NAME.rc
# once it ends (PROBE_JOB).
probe_run() {
	local name=$1 test=$2
	shift 2
	(
		rc=0
		timeout -s KILL 120 minivmm --kernel /probe/probe.elf --memory 256M --net "${PROBE_NET:-tap=mvt0}" \
			--cmdline "test=$test net.ip=10.0.2.15/24 net.peer=10.0.2.1 $*" </dev/null \
			>"$W/$name.out" 2>"$W/$name.err" || rc=$?
		echo $rc >"$W/$name.rc"
	) &
	PROBE_JOB=$!
}

# tcpperf_start NAME ARGS...: /probe/tcpperf listening on 10.0.2.1:9001 in the background
# (output in $W/NAME.out, TOOL_JOB), once it listens.
tcpperf_start() {
	local name=$1 i=0
	shift
	/probe/tcpperf "$@" --bind 10.0.2.1 --port 9001 --ready-file "$W/$name.ready" \
		>"$W/$name.out" 2>&1 &
	TOOL_JOB=$!
	while [ ! -s "$W/$name.ready" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$W/$name.ready" ] || fail "$name: tcpperf did not listen"
}

# sink_ok NAME MIB [probe words...]: the probe's tcp_sink on port 9000 gets MIB MiB from
# tcpperf send, and must pass with every byte right.
sink_ok() {
	local name=$1 mib=$2
	shift 2
	probe_run $name tcp_sink net.port=9000 net.tcp_mib=$mib "$@"
	wait_out $name '^probe: tcp_sink listening' 60 || return 1
	/probe/tcpperf send --dest 10.0.2.15 --port 9000 --mib $mib >$W/$name.send 2>&1 ||
		fail "$name: tcpperf send: $(cat $W/$name.send)"
	wait $PROBE_JOB
	expect_status $name 0 && expect_out $name '^probe: PASS' || return 1
	expect_out $name "^probe: tcp_sink bytes=$((mib << 20)) .* bad=0 "
}

# The probe's own TCP against L1's Linux on a tap, every byte checked by the receiver:
# tcp_stream into tcpperf recv (offloads on, off, and not offered; 64-byte writes), tcpperf send into
# tcp_sink (receive offloads off, and on: large frames), tcp_rr against tcpperf rr-server,
# tcp_crr against tcpperf crr-server (a connection per transaction), tcp_stream from one
# probe into another's tcp_sink;
# one wrong byte into tcp_sink, and one in tcp_rr's echo, make the guest fail. The stream with
# the device's offloads off and the first tcp_rr run with adaptive polling on (poll-us=1000);
# the stream with offloads on and that tcp_rr transmit in io_uring batches (tx-uring=on).
sc_probe_tcp() {
	taps mvt0 || return 1
	# tcp_stream with the transmit offloads on (the tap offers CSUM and HOST_TSO4: TSO frames
	# of up to 64 KiB that L1's tap cuts) and off (MSS frames, every checksum the probe's);
	# then the device offering none (minivmm offload=off): tcpperf checks every byte each time.
	local o tso
	for o in on off devoff; do
		tcpperf_start recv-$o recv --mib 16 || return 1
		if [ $o = devoff ]; then
			PROBE_NET=tap=mvt0,offload=off,poll-us=1000 probe_run stream-$o tcp_stream net.peer_port=9001 net.tcp_mib=16
		elif [ $o = on ]; then # the TSO frames through io_uring batches (tx-uring=on)
			PROBE_NET=tap=mvt0,tx-uring=on probe_run stream-$o tcp_stream net.peer_port=9001 net.tcp_mib=16 net.offload=$o
		else
			probe_run stream-$o tcp_stream net.peer_port=9001 net.tcp_mib=16 net.offload=$o
		fi
		wait $PROBE_JOB
		wait $TOOL_JOB || fail "stream-$o: tcpperf recv: $(cat $W/recv-$o.out)"
		expect_status stream-$o 0 && expect_out stream-$o '^probe: PASS' || return 1
		grep -q '^tcpperf: mode=recv mss=[0-9]* bytes=16777216 .* bad=0 first_bad=0 ok=1$' $W/recv-$o.out ||
			{ fail "stream-$o: $(cat $W/recv-$o.out)"; return 1; }
		tso=$(sed -n 's/^probe: tcp_stream .* tso_frames=\([0-9]*\).*/\1/p' $W/stream-$o.out)
		if [ $o = on ]; then
			expect_out stream-$o '^probe: net .* offload=csum,tso4 ' || return 1
			uring_used stream-$o || return 1
			[ "${tso:-0}" -gt 0 ] || { fail "stream-on: no TSO frame sent"; return 1; }
		else
			expect_out stream-$o '^probe: net .* offload=off ' || return 1
			[ "$tso" = 0 ] || { fail "stream-$o: $tso TSO frames with offloads off"; return 1; }
		fi
		echo "offload $o: $(grep '^tcpperf' $W/recv-$o.out) tso_frames=$tso"
	done
	# 64-byte writes (net.write=64): one tcp_send call per write, and (no Nagle) 64-byte
	# segments while the window is open, the first flight at least; tcpperf checks every byte.
	tcpperf_start recv-w64 recv --mib 1 || return 1
	probe_run stream-w64 tcp_stream net.peer_port=9001 net.tcp_mib=1 net.write=64
	wait $PROBE_JOB
	wait $TOOL_JOB || fail "stream-w64: tcpperf recv: $(cat $W/recv-w64.out)"
	expect_status stream-w64 0 && expect_out stream-w64 '^probe: PASS' || return 1
	grep -q '^tcpperf: mode=recv mss=[0-9]* bytes=1048576 .* bad=0 first_bad=0 ok=1$' $W/recv-w64.out ||
		{ fail "stream-w64: $(cat $W/recv-w64.out)"; return 1; }
	expect_out stream-w64 '^probe: tcp_stream bytes=1048576 .* write=64 sends=16384 ' || return 1
	local small=$(sed -n 's/^probe: tcp_stream .* small_segs=\([0-9]*\).*/\1/p' $W/stream-w64.out)
	[ "${small:-0}" -ge 100 ] || { fail "stream-w64: $small segments shorter than the MSS"; return 1; }
	grep '^probe: tcp_stream bytes' $W/stream-w64.out

	sink_ok sink 16 || return 1
	expect_out sink '^probe: net .* rx_offload=off ' || return 1
	grep '^probe: tcp_sink bytes' $W/sink.out
	# With the receive offloads (net.rx_offload=on: GUEST_CSUM + GUEST_TSO4 over mergeable
	# buffers) L1's tap hands over frames of up to 64 KiB: the probe gathers them, and still
	# finds every byte right.
	sink_ok sinkrx 16 net.rx_offload=on || return 1
	expect_out sinkrx '^probe: net .* rx_offload=csum,tso4 ' || return 1
	expect_out sinkrx '^probe: tcp_sink bytes=16777216 .* bad=0 .* rx_large=[1-9]' || return 1
	grep '^probe: tcp_sink bytes' $W/sinkrx.out
	# One byte wrong: the guest finds it, and fails.
	probe_run bad tcp_sink net.port=9000
	wait_out bad '^probe: tcp_sink listening' 60 || return 1
	/probe/tcpperf send --dest 10.0.2.15 --port 9000 --mib 4 --flip 3000001 >$W/sendbad.out 2>&1
	wait $PROBE_JOB
	[ "$(status_of bad)" != 0 ] || fail "bad: the probe passed a wrong byte"
	expect_out bad '^probe: tcp_sink bytes=4194304 .* bad=1 first_bad=3000001 ' &&
		expect_out bad '^probe: FAIL tcp_sink: wrong bytes' || return 1
	grep '^probe: FAIL' $W/bad.out

	tcpperf_start rrsrv rr-server --size 256 || return 1
	PROBE_NET=tap=mvt0,poll-us=1000,tx-uring=on probe_run rr tcp_rr net.peer_port=9001 net.size=256 net.secs=1
	wait $PROBE_JOB
	wait $TOOL_JOB || fail "rr: tcpperf rr-server: $(cat $W/rrsrv.out)"
	expect_status rr 0 && expect_out rr '^probe: PASS' || return 1
	local trans=$(sed -n 's/^probe: tcp_rr size=256 trans=\([0-9]*\) .*/\1/p' $W/rr.out)
	[ "${trans:-0}" -gt 0 ] || { fail "rr: no transactions"; return 1; }
	grep -q "^tcpperf: mode=rr-server size=256 trans=$trans ok=1$" $W/rrsrv.out ||
		fail "rr: the guest counted $trans, the server: $(cat $W/rrsrv.out)"
	grep '^probe: tcp_rr size' $W/rr.out
	grep -q 'poll 1000 us' $W/rr.err || fail "rr: minivmm did not poll"
	uring_used rr || return 1
	grep -E 'polls found|kicks|adaptive polling' $W/rr.err
	# An echo with one byte wrong (in the 3rd response): the guest stops there and fails.
	tcpperf_start rrbad rr-server --size 256 --flip 600 || return 1
	probe_run rrb tcp_rr net.peer_port=9001 net.size=256 net.secs=5
	wait $PROBE_JOB
	wait $TOOL_JOB
	[ "$(status_of rrb)" != 0 ] || fail "rrb: the probe took a wrong echo"
	expect_out rrb '^probe: tcp_rr size=256 trans=2 .* bad=1 ' &&
		expect_out rrb '^probe: FAIL tcp_rr: a reply that is not the echo' || return 1
	grep '^probe: FAIL' $W/rrb.out
	# tcp_crr: a connection per transaction against tcpperf crr-server, the guest closing
	# first and each connection through TIME_WAIT, on a new port each; both ends count the
	# same connections, none reset, every echo checked.
	tcpperf_start crrsrv crr-server --size 100 --idle-ms 3000 || return 1
	probe_run crr tcp_crr net.peer_port=9001 net.size=100 net.secs=2
	wait $PROBE_JOB
	wait $TOOL_JOB || fail "crr: tcpperf crr-server: $(cat $W/crrsrv.out)"
	expect_status crr 0 && expect_out crr '^probe: PASS' || return 1
	local ct=$(sed -n 's/^probe: tcp_crr size=100 trans=\([0-9]*\) .*/\1/p' $W/crr.out)
	[ "${ct:-0}" -gt 1 ] || { fail "crr: $ct transactions"; return 1; }
	grep -q "^tcpperf: mode=crr-server size=100 conns=$ct trans=$ct resets=0 errors=0 ok=1$" $W/crrsrv.out ||
		{ fail "crr: the guest counted $ct, the server: $(cat $W/crrsrv.out)"; return 1; }
	expect_out crr "^probe: tcp_crr .* bad=0 time_waits=$ct " || return 1
	local p0=$(sed -n 's/^probe: tcp_crr .* first_port=\([0-9]*\) .*/\1/p' $W/crr.out)
	local p1=$(sed -n 's/^probe: tcp_crr .* next_port=\([0-9]*\).*/\1/p' $W/crr.out)
	[ $((p1 - p0)) = "$ct" ] || { fail "crr: ports $p0 to $p1 for $ct connections"; return 1; }
	grep '^probe: tcp_crr size' $W/crr.out
	# Guest to guest (netbench --proto tcp --dir g2g's programs; L1 routes between two taps
	# here, where netbench bridges): A's tcp_stream in 1448-byte writes into B's tcp_sink,
	# which checks every byte and the length.
	tunctl -t mvt1 >/dev/null && ip addr add 10.0.3.1/24 dev mvt1 && ip link set mvt1 up ||
		{ fail "tap mvt1"; return 1; }
	local fwd=$(cat /proc/sys/net/ipv4/ip_forward)
	echo 1 >/proc/sys/net/ipv4/ip_forward
	PROBE_NET=tap=mvt1 probe_run g2g-b tcp_sink net.ip=10.0.3.15/24 net.peer=10.0.3.1 net.port=9000 net.tcp_mib=4
	local bjob=$PROBE_JOB
	wait_out g2g-b '^probe: tcp_sink listening' 60 || { echo "$fwd" >/proc/sys/net/ipv4/ip_forward; return 1; }
	probe_run g2g-a tcp_stream net.peer=10.0.3.15 net.gw=10.0.2.1 net.peer_port=9000 net.tcp_mib=4 net.write=1448
	wait $PROBE_JOB
	wait $bjob
	echo "$fwd" >/proc/sys/net/ipv4/ip_forward
	expect_status g2g-a 0 && expect_out g2g-a '^probe: PASS' || return 1
	expect_status g2g-b 0 && expect_out g2g-b '^probe: PASS' || return 1
	expect_out g2g-a '^probe: tcp_stream bytes=4194304 .* write=1448 sends=2897 ' || return 1
	expect_out g2g-b '^probe: tcp_sink bytes=4194304 .* bad=0 ' || return 1
	grep '^probe: tcp_sink bytes' $W/g2g-b.out
	untaps mvt0 mvt1
}

# lossy TAP: netem drops 1% of the frames each way on TAP: to the guest on its egress, from
# the guest on ifb0's, where TAP's ingress is redirected (ifb0 exists once ifb is loaded).
lossy() {
	local tc=/usr/sbin/tc # iproute2's: busybox's tc has no netem
	ip link set ifb0 up &&
		$tc qdisc add dev "$1" root netem loss 1% &&
		$tc qdisc add dev "$1" handle ffff: ingress &&
		$tc filter add dev "$1" parent ffff: matchall action mirred egress redirect dev ifb0 &&
		$tc qdisc replace dev ifb0 root netem loss 1% || { fail "netem on $1 and ifb0"; return 1; }
}

# netem_drops DEV: the frames DEV's root qdisc (netem) has dropped so far.
netem_drops() {
	local n=$(/usr/sbin/tc -s qdisc show dev "$1" | sed -n 's/.*Sent .* (dropped \([0-9]*\),.*/\1/p' | head -n 1)
	echo "${n:-0}"
}

# The probe's TCP over a link that loses 1% of the frames each way (issue 20): 4 MiB from the
# guest into tcpperf recv (offloads off: ~2900 MSS frames, so 1% loss is sure to hit some; with
# TSO on, ~100 frames of up to 64 KiB each, it missed them all about one run in four), 4 MiB from
# tcpperf send into tcp_sink (the probe keeps no out-of-order segments: the sender resends),
# every byte checked; the loss shows as retransmits on the probe's side and as out-of-order
# segments or duplicate ACKs on its receive side, and in netem's own drop counters.
sc_probe_tcp_loss() {
	taps mvt0 || return 1
	lossy mvt0 || return 1
	tcpperf_start lrecv recv --mib 4 || return 1
	probe_run lstream tcp_stream net.peer_port=9001 net.tcp_mib=4 net.offload=off
	wait $PROBE_JOB
	wait $TOOL_JOB || fail "lstream: tcpperf recv: $(cat $W/lrecv.out)"
	expect_status lstream 0 && expect_out lstream '^probe: PASS' || return 1
	grep -q '^tcpperf: mode=recv mss=[0-9]* bytes=4194304 .* bad=0 first_bad=0 ok=1$' $W/lrecv.out ||
		{ fail "lstream: $(cat $W/lrecv.out)"; return 1; }
	local line=$(tr -d '\r' <$W/lstream.out | grep '^probe: tcp_stream bytes=')
	local rt=$(echo "$line" | sed -n 's/.* retransmits=\([0-9]*\) fast_retransmits=\([0-9]*\) .*/\1 \2/p' )
	[ $(( ${rt% *} + ${rt#* } )) -gt 0 ] || fail "lstream: no retransmit over a lossy link: $line"
	echo "stream, 1% loss: $line"

	# The host's sender hands mvt0's qdisc GSO frames (segmented after it), so with a fast sink
	# 4 MiB can be ~100 frames that 1% loss all spares (one transfer in two or three, seen in
	# CI): transfer again until netem has dropped one of this direction's, then check.
	local tries=0 before
	while :; do
		before=$(netem_drops mvt0)
		sink_ok lsink 4 || return 1
		[ "$(netem_drops mvt0)" -le "$before" ] || break
		tries=$((tries + 1))
		[ $tries -lt 10 ] || { fail "lsink: netem on mvt0 dropped nothing in 10 transfers"; return 1; }
		echo "sink, 1% loss: netem dropped none of the transfer's frames; again"
	done
	line=$(tr -d '\r' <$W/lsink.out | grep '^probe: tcp_sink bytes=')
	local ooo=$(echo "$line" | sed -n 's/.* dup_acks_sent=\([0-9]*\) ooo_dropped=\([0-9]*\) .*/\1 \2/p' )
	[ $(( ${ooo% *} + ${ooo#* } )) -gt 0 ] || fail "lsink: no segment out of order over a lossy link: $line"
	echo "sink, 1% loss: $line"
	local drops dev
	for dev in mvt0 ifb0; do
		drops=$(netem_drops $dev)
		[ "$drops" -gt 0 ] || fail "netem on $dev dropped nothing"
		echo "netem on $dev dropped $drops"
	done
	/usr/sbin/tc qdisc del dev ifb0 root
	untaps mvt0
	[ ! -f $W/.failed ]
}

ALL_SCENARIOS="console console_virtio console_virtio_mmio vports reboot poweroff panic silent triple_fault info boot net_pci net_mmio net_timer_nooffload net_user blk_pci blk_mmio rootfs rng fs_pci fs_mmio fs_backend_dies share vublk_pci vublk_mmio vublk_backend_dies run balloon_pci balloon_mmio control probe probe_fs probe_console probe_vublk startup snapshot snapshot_high snapshot_user snapshot_devices snapshot_linux probe_tcp probe_tcp_loss"

# run_one NAME: one try of a scenario, then whatever it left behind is cleared (also on failure:
# VMMs, servers, taps, mounts); on failure its consoles, stderr and exit statuses are printed.
run_one() {
	local t=$1 rc n f
	LAST=$t
	dmesg -c >/dev/null # the kernel log printed on failure is this try's only
	if ( set -u; "sc_$t" ) && [ ! -f "$W/.failed" ]; then rc=PASS; else rc=FAIL; fi
	killall -KILL minivmm 2>/dev/null
	killall httpd 2>/dev/null
	killall tcpperf 2>/dev/null
	for n in /sys/class/net/mvt*; do [ -e "$n" ] && tunctl -d "$(basename "$n")" >/dev/null; done
	grep " $W/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount "$m"; done
	if [ $rc = FAIL ]; then
		for f in "$W"/*.out; do
			[ -f "$f" ] || continue
			n=$(basename "$f" .out)
			echo "--- $n: console (last 60 lines) ---"; tail -n 60 "$f"
			echo "--- $n: minivmm stderr ---"; tail -n 30 "$W/$n.err"
			echo "--- $n: exit status $(cat "$W/$n.rc" 2>/dev/null)"
		done
		echo "--- the test VM's kernel log during it (last 30 lines) ---"; dmesg | tail -n 30
	fi
	rm -rf "$W"/* "$W/.failed"
	[ $rc = PASS ]
}

# The L2 guests run on an emulated hypervisor (KVM inside QEMU TCG's SVM), which now and then
# faults a guest for no reason of its own (an L2 triple fault mid-balloon-inflate in about one
# run in sixteen, never reproduced on demand). A failed scenario therefore gets one more try,
# up to RETRIES per test VM: its result line then says "second-try", and the first try's log
# (between "@@ START" and "@@ RETRY") stays in the console for run.sh to print. A scenario that
# fails twice fails.
RETRIES=3

run_all() {
	local list=$(echo "${1:-}" | tr ',' ' ') t start rc note retries=$RETRIES
	[ -z "$list" ] && list=$ALL_SCENARIOS
	mkdir -p $W
	for t in $list; do
		start=$(date +%s)
		note=""
		echo "@@ START $t"
		if run_one $t; then
			rc=PASS
		elif [ $retries -gt 0 ]; then
			retries=$((retries - 1))
			echo "@@ RETRY $t"
			note=" second-try"
			if run_one $t; then rc=PASS; else rc=FAIL; fi
		else
			rc=FAIL
		fi
		echo "@@ RESULT $t $rc $(($(date +%s) - start))s$note"
	done
}
