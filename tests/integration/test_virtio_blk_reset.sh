#!/usr/bin/env bash
# A virtio-blk reset with large requests in flight (the probe's test=blk-reset), on each
# transport: 32 reads of 384 MiB each (6 descriptors aliasing one 64 MiB range of guest RAM);
# once the first has completed (so the rest are in flight), the driver writes status 0. The
# worker-thread engine does the copying off the I/O thread (io_uring copies cached data inline,
# in io_uring_enter). The status write returns at once and the status reads non-zero until the
# reads are done; meanwhile the control socket answers within 100 ms beyond what starting the
# client costs (a reset that waited for
# them on the vCPU thread held the device lock, which the I/O thread needs); no read completes
# into the old ring, and the disk works again after a new initialisation.
source "$(dirname "$0")/lib.sh"
need_kvm

for transport in mmio pci; do
	name=blk-reset-$transport
	disk=$TEST_TMP/$name.img
	truncate -s 512M "$disk"
	sock=$TEST_TMP/$name.sock
	MINIVMM_BLK_NO_IO_URING=1 run_vmm_bg --fifo "$name" --kernel "$FW/probe.elf" \
		--memory 512M --disk "path=$disk,transport=$transport" --api-sock "$sock" \
		--cmdline "test=blk-reset"
	wait_line "$name" out '^probe: blk-reset transport=' 600
	expect_line "$name" out "^probe: blk-reset transport=$transport requests=32 bytes_each=402653184 .* pending=1\$"
	# What starting the client costs by itself (a sanitizer build's start-up alone took some
	# 100 ms on a busy 2-core CI machine), against a socket that is not there: not counted.
	t0=$(date +%s%N)
	"$MINIVMM" ctl --sock "$TEST_TMP/no-such.sock" status >/dev/null 2>&1
	base=$((($(date +%s%N) - t0) / 1000000))
	t0=$(date +%s%N)
	timeout 1 "$MINIVMM" ctl --sock "$sock" status >"$TEST_TMP/$name.status" ||
		fail "$name: the control socket did not answer within 1 s during the reset"
	ms=$((($(date +%s%N) - t0) / 1000000 - base))
	grep -q '"ok":true' "$TEST_TMP/$name.status" || fail "$name: $(cat "$TEST_TMP/$name.status")"
	[ "$ms" -le 100 ] ||
		fail "$name: the control socket took $ms ms (beyond the client's own $base ms) to answer during the reset"
	echo >&3 # the probe goes on: it waits for status 0 and sets the disk up again
	wait_vmm "$name" 120
	expect_probe_pass "$name"
	# still_pending=1: the answer above came while the reset was pending.
	expect_line "$name" out '^probe: blk-reset still_pending=1 reset_wait_us=[0-9]+ used_after_reset=0$'
	expect_line "$name" out '^probe: blk-reset ok$'
	us=$(sed -n 's/^probe: blk-reset .*reset_write_us=\([0-9]*\) .*/\1/p' "$TEST_TMP/$name.out")
	[ -n "$us" ] && [ "$us" -le 100000 ] || fail "$name: the reset write took ${us:-?} us"
done
exit 0
