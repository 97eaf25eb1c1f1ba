#!/usr/bin/env bash
# virtio-blk end to end with the probe (test=blk): both cache modes, both transports, two disks
# in one VM, a read-only disk that refuses writes (image unchanged), malformed requests
# refused, the worker-thread engine, bad --disk options, and what the guest flushed: the guest
# writes and flushes, the host checks that the image is open with O_DIRECT exactly for
# cache=none, SIGKILLs minivmm and checks the image. (The host page cache outlives a killed
# process, so that the FLUSH reached the disk is checked by the unit tests, flush_writes_back_*.)
source "$(dirname "$0")/lib.sh"
need_kvm

transports=(mmio pci)

img() { truncate -s "$2" "$TEST_TMP/$1.img" && echo "$TEST_TMP/$1.img"; }

# The open flags (octal, from /proc/PID/fdinfo) of the descriptor process PID holds on FILE.
open_flags() {
	local pid=$1 file fd
	file=$(realpath "$2")
	for fd in /proc/"$pid"/fd/*; do
		if [ "$(readlink "$fd")" = "$file" ]; then
			sed -n 's/^flags:[[:space:]]*//p' "/proc/$pid/fdinfo/${fd##*/}"
			return 0
		fi
	done
	return 1
}
O_DIRECT=$((8#40000)) # x86-64

# The pattern generator the durability check compares against.
cc -O2 -o "$TEST_TMP/blk_pattern" "$ROOT/tests/integration/blk_pattern.c" ||
	fail "cannot build the pattern helper"

# One disk: write, flush, verify, refuse bad requests, measure; each transport and cache mode.
for transport in "${transports[@]}"; do
	for cache in writeback none; do
		name=blk-$transport-$cache
		disk=$(img "$name" 32M)
		run_vmm "$name" 120 --kernel "$FW/probe.elf" \
			--disk "path=$disk,cache=$cache,serial=sn-$cache,transport=$transport" \
			--cmdline "test=blk blk.expect=1 blk.bytes=16M blk.secs=1"
		expect_probe_pass "$name"
		expect_line "$name" out "^probe: blk dev=0 transport=$transport capacity=65536 serial=sn-$cache bytes=16777216 verify=ok"
		expect_line "$name" out '^probe: blk dev=0 bad_sector=ioerr bad_type=unsupp$'
		expect_line "$name" out '^probe: blk dev=0 randread_4k_iops=[1-9][0-9]* seq_read_mbps=[0-9]+ seq_write_mbps=[0-9]+'
		expect_line "$name" err "cache=$cache, io_uring"
	done
done

# Two disks in one VM (through the bzImage entry), each its own device.
d0=$(img two0 16M)
d1=$(img two1 24M)
run_vmm blk-two 120 --kernel "$FW/probe.bzImage" \
	--disk "path=$d0,serial=first,transport=mmio" --disk "path=$d1,serial=second,transport=mmio" \
	--cmdline "test=blk blk.expect=2 blk.bytes=8M blk.secs=1"
expect_probe_pass blk-two
expect_line blk-two out '^probe: blk dev=0 transport=mmio capacity=32768 serial=first .*verify=ok'
expect_line blk-two out '^probe: blk dev=1 transport=mmio capacity=49152 serial=second .*verify=ok'

# Read-only: the guest sees VIRTIO_BLK_F_RO, its write gets IOERR, the image is unchanged.
ro=$TEST_TMP/ro.img
head -c 8M /dev/urandom >"$ro"
before=$(cksum <"$ro")
chmod 0444 "$ro"
run_vmm blk-ro 120 --kernel "$FW/probe.elf" --disk "path=$ro,readonly=on,transport=mmio" \
	--cmdline "test=blk blk.ro=1 blk.secs=1"
expect_probe_pass blk-ro
expect_line blk-ro out '^probe: blk dev=0 .*verify=ok'
[ "$(cksum <"$ro")" = "$before" ] || fail "blk-ro: the read-only image changed"

# The worker-thread engine (what runs where io_uring cannot be set up).
disk=$(img workers 16M)
MINIVMM_BLK_NO_IO_URING=1 run_vmm blk-workers 120 --kernel "$FW/probe.elf" \
	--disk "path=$disk,cache=none,transport=mmio" --cmdline "test=blk blk.secs=1"
expect_probe_pass blk-workers
expect_line blk-workers err 'worker threads'

# What the guest flushed: the image is open with O_DIRECT for cache=none only; SIGKILL as soon
# as the guest reports its flush completed; the image must hold exactly the pattern (computed
# here from the seed).
for cache in writeback none; do
	name=blk-durable-$cache
	disk=$(img "$name" 16M)
	seed=$((RANDOM * 65536 + RANDOM))
	"$MINIVMM" --kernel "$FW/probe.elf" --disk "path=$disk,cache=$cache,transport=mmio" \
		--cmdline "test=blk-durable blk.seed=$seed blk.bytes=12M" </dev/null \
		>"$TEST_TMP/$name.out" 2>"$TEST_TMP/$name.err" &
	pid=$!
	on_exit "kill -KILL $pid 2>/dev/null"
	# A complete line: the console writes byte by byte, and a kill mid-line would cut it.
	VMM_PID=$pid wait_line "$name" out "^probe: blk durable flushed bytes=12582912 seed=$seed\$" 600
	flags=$(open_flags "$pid" "$disk") || fail "$name: minivmm holds no descriptor on $disk"
	if [ "$cache" = none ]; then
		((8#$flags & O_DIRECT)) || fail "$name: the image is open without O_DIRECT ($flags)"
	else
		((8#$flags & O_DIRECT)) && fail "$name: the image is open with O_DIRECT ($flags)"
	fi
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	"$TEST_TMP/blk_pattern" "$seed" 12582912 >"$TEST_TMP/$name.expected"
	cmp -n 12582912 "$disk" "$TEST_TMP/$name.expected" ||
		fail "$name: the image does not hold the flushed pattern"
done

# Bad --disk options: one line on stderr, exit status 2.
bad_disk() {
	local name=$1 want=$2
	shift 2
	run_vmm "$name" 20 --kernel "$FW/probe.elf" "$@"
	expect_status "$name" 2
	expect_line "$name" err "$want"
}
bad_disk disk-nopath 'path=IMAGE or vhost-user=PATH is required' --disk readonly=on
bad_disk disk-missing "cannot open '$TEST_TMP/nope.img'" --disk "path=$TEST_TMP/nope.img"
bad_disk disk-serial 'longer than 20 bytes' --disk "path=$d0,serial=123456789012345678901"
bad_disk disk-cache "invalid cache 'fast'" --disk "path=$d0,cache=fast"
bad_disk disk-dir 'neither a regular file nor a block device' --disk "path=$TEST_TMP,readonly=on"
exit 0
