#!/usr/bin/env bash
# Snapshot and restore (issue 21, milestone 1): the probe counting on 2 vCPUs (test=counter) is
# saved through the control socket (and left paused), killed, and restored twice from the same
# snapshot, once --paused and resumed; two rng devices (pci and mmio), read on every line, and a
# disk (a block written and read back on every line, all checked at the end) serve on after it; each restored guest carries on exactly where the original
# stopped (every counter value once across the two consoles, one RAM checksum, no second boot)
# and passes. On a PVM host the restored vCPUs still run natively (cs RPL 3, the APs' count rate).
# The snapshot names no host file: the disk's image is given again with --backend.
# Refusals, each one line and exit status 2: a missing directory, a directory that is not a
# snapshot, another format version, a flipped byte in the state, a truncated memory file, one
# that others may write, a disk without --backend, a disk image of another size;
# machine flags with --restore. (--balloon and --net: test_snapshot_devices.sh.)
source "$(dirname "$0")/lib.sh"
need_kvm

MAX=25
sock=$TEST_TMP/vm.sock
snap=$TEST_TMP/snap

# counters NAME...: the counter values on those consoles, in order, one line.
counters() { cat "${@/#/$TEST_TMP/}" | tr -d '\r' | sed -n 's/^probe: counter=\([0-9]*\) .*/\1/p' | xargs; }

disk=$TEST_TMP/disk.img
truncate -s 16M "$disk"
run_vmm_bg orig --kernel "$FW/probe.bzImage" --cpus 2 --memory 64M --api-sock "$sock" \
	--rng --rng,transport=mmio --disk "path=$disk,transport=mmio" \
	--cmdline "test=counter counter.ms=200 counter.max=$MAX counter.rng=1 counter.blk=1"
orig_pid=$VMM_PID
wait_line orig out '^probe: counter=3 '
expect_line orig out '^probe: counter start cpus=2 rng=2 blk=1 '
out=$("$MINIVMM" ctl --sock "$sock" snapshot "$snap") || fail "snapshot: $out"
out=$("$MINIVMM" ctl --sock "$sock" status)
grep -q '"state":"paused"' <<<"$out" || fail "not paused after the snapshot: $out"
# (Had the guest run on after the snapshot, the restored guests would repeat its lines.)
before=$(counters orig.out)
kill -9 "$orig_pid"
wait "$orig_pid" 2>/dev/null
for f in snapshot.json state.bin memory; do [ -f "$snap/$f" ] || fail "no $f in the snapshot"; done
[ "$(stat -c %s "$snap/memory")" = $((64 << 20)) ] || fail "memory file is not 64 MiB"
echo "snapshot of 64 MiB RAM: $(du -k "$snap/memory" | cut -f1) KiB on disk, saved at counter ${before##* }"

# check_restored NAME: the original then NAME count 1..MAX once each with one checksum.
check_restored() {
	expect_probe_pass "$1"
	grep -q 'minivmm probe v1' "$TEST_TMP/$1.out" && fail "$1: the restored guest booted again"
	[ "$(counters orig.out "$1.out")" = "$(seq -s ' ' 1 $MAX)" ] ||
		fail "$1: counters '$(counters orig.out "$1.out")', expected 1 to $MAX once each"
	[ "$(cat "$TEST_TMP/orig.out" "$TEST_TMP/$1.out" | grep -o 'crc32=[0-9a-f]*' | sort -u | wc -l)" = 1 ] ||
		fail "$1: the RAM checksum changed across the restore"
	grep '^probe: counter=' "$TEST_TMP/$1.out" | grep -vq 'rng_bytes=8192 blk=ok' &&
		fail "$1: a restored rng device or the disk stopped serving"
	expect_line "$1" out "^probe: counter blk verified=$MAX"
	if grep -q '^probe: mode=native-pvm' "$TEST_TMP/orig.out"; then
		# Registered VIF pages are vCPU state: the restored vCPUs still run natively.
		grep '^probe: counter=' "$TEST_TMP/$1.out" | grep -vq 'cs=0x.[37bf]' &&
			fail "$1: the restored BSP left native mode (cs RPL 0)"
		# The APs count at native speed after the restore too (emulated is ~1000x slower).
		local rate_before rate_after
		rate_before=$(grep -o 'ap_ticks=[0-9]*' "$TEST_TMP/orig.out" | tail -n 2 | cut -d= -f2 | xargs | awk '{print $2 - $1}')
		rate_after=$(grep -o 'ap_ticks=[0-9]*' "$TEST_TMP/$1.out" | tail -n 2 | cut -d= -f2 | xargs | awk '{print $2 - $1}')
		[ "$rate_after" -ge $((rate_before / 20)) ] ||
			fail "$1: the APs count $rate_after per line after the restore, $rate_before before"
	fi
}

# A snapshot names no host resource: the disk's image comes from the restore's --backend.
grep -qF "$disk" "$snap/state.bin" && fail "state.bin names the disk's image"
expect_usage_error no-backend 'device 2 is a --disk: give what it uses on the host with --backend 2:OPTIONS' --restore "$snap"
run_vmm r1 120 --restore "$snap" --backend "2:path=$disk"
check_restored r1
expect_line r1 err '^minivmm: restored .* \(64 MiB, 2 vCPUs\) in [0-9.]+ ms$'
grep '^minivmm: restored' "$TEST_TMP/r1.err"

# The same snapshot again, paused until the socket resumes it.
run_vmm_bg r2 --restore "$snap" --backend "2:path=$disk" --paused --api-sock "$sock"
wait_line r2 err '^minivmm: restored .*; paused$'
out=$("$MINIVMM" ctl --sock "$sock" status)
grep -q '"state":"paused"' <<<"$out" || fail "--paused: not paused: $out"
[ -s "$TEST_TMP/r2.out" ] && fail "--paused: the guest ran before resume"
"$MINIVMM" ctl --sock "$sock" resume >/dev/null || fail "resume"
wait_vmm r2 120
check_restored r2

mkdir "$TEST_TMP/empty"
expect_usage_error missing 'No such file or directory' --restore "$TEST_TMP/nothing"
expect_usage_error not-snapshot 'is not a minivmm snapshot' --restore "$TEST_TMP/empty"
cp -r "$snap" "$TEST_TMP/v1" && sed -i 's/"version":2/"version":1/' "$TEST_TMP/v1/snapshot.json"
expect_usage_error version 'snapshot format version 1, this minivmm reads version 2' --restore "$TEST_TMP/v1"
cp -r "$snap" "$TEST_TMP/flip" && printf '\377' | dd of="$TEST_TMP/flip/state.bin" bs=1 seek=300 conv=notrunc 2>/dev/null
expect_usage_error flipped 'checksum mismatch' --restore "$TEST_TMP/flip"
cp -r "$snap" "$TEST_TMP/short" && truncate -s 32M "$TEST_TMP/short/memory"
expect_usage_error truncated 'truncated' --restore "$TEST_TMP/short"
cp -r "$snap" "$TEST_TMP/ww" && chmod o+w "$TEST_TMP/ww/memory"
expect_usage_error others-write 'memory: writable by its group or others' --restore "$TEST_TMP/ww" --backend "2:path=$disk"
expect_usage_error machine-flag '--cpus cannot be used with --restore' --restore "$snap" --cpus 2
expect_usage_error paused-alone '--paused is for --restore only' --kernel "$FW/probe.elf" --paused
truncate -s 32M "$disk"
expect_usage_error disk-size 'the image has 65536 sectors, the snapshot 32768' --restore "$snap" --backend "2:path=$disk"

echo "PASS"
