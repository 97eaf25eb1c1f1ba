#!/usr/bin/env bash
# virtio-balloon driven through the control socket: the probe touches 300 MiB, the balloon
# target goes to 128 MiB and the VMM's RSS must drop by at least 100 MiB; back to 0 the probe
# must be able to use the memory again. Also: deflate-on-oom is offered when asked, free page
# reporting releases the range the probe reports, statistics arrive, bad targets are refused.
# Deflate on OOM: with the balloon at 128 MiB the probe's workload runs out of memory; with
# deflate-on-oom=on it deflates 64 MiB below the target and reuses exactly those pages (the
# device's `actual` and released pages go down, the VMM's RSS rises again), without it the
# balloon stays at its target, the workload comes up short and the VMM keeps running.
source "$(dirname "$0")/lib.sh"
need_kvm

sock=$TEST_TMP/vm.sock
ctl() { "$MINIVMM" ctl --sock "$sock" "$@"; }

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$VMM_PID/status"; }

# start [--fifo] NAME BALLOON-OPTIONS GUEST-WORDS: the VMM in the background (run_vmm_bg),
# console in NAME.out; guest RAM is $VM_MEM (default 512M).
start() {
	local fifo=()
	[ "$1" = --fifo ] && { fifo=(--fifo); shift; }
	run_vmm_bg "${fifo[@]}" "$1" --kernel "$FW/probe.elf" --memory "${VM_MEM:-512M}" \
		"--balloon$2" --api-sock "$sock" --cmdline "test=balloon balloon.timeout=120 $3"
}

# json_num JSON KEY: the first integer value of KEY.
json_num() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" <<<"$1"; }

# oom_start NAME BALLOON-OPTIONS: 256 MiB guest, 232 MiB of it touched (the probe's free RAM
# all but a few MiB, so touching free pages later barely moves the RSS), workload 64 MiB past
# the free RAM, started by a byte on the console; the balloon is brought to 128 MiB and the
# probe waits. Sets before (RSS in KiB with the balloon at 128 MiB).
oom_start() {
	VM_MEM=256M start --fifo "$1" "$2" \
		"balloon.touch_mib=232 balloon.oom=64 balloon.oom_start=serial"
	wait_line "$1" out '^probe: balloon ready touched_mib=232'
	ctl balloon-set 0 >/dev/null || fail "$1: balloon-set 0" # stop pre-faulting
	out=$(ctl balloon-set 128) || fail "$1: balloon-set 128: $out"
	wait_line "$1" out '^probe: balloon oom waiting'
	expect_line "$1" out '^probe: balloon actual_pages=32768$'
	out=$(ctl status) || fail "$1: status: $out"
	[ "$(json_num "$out" actual_pages)" = 32768 ] && [ "$(json_num "$out" released_pages)" = 32768 ] ||
		fail "$1: balloon not at 128 MiB before the workload: $out"
	before=$(rss_kib)
	printf x >&3 # start the workload
}

# oom_end NAME: the target goes to 0, the probe deflates the rest and passes.
oom_end() {
	ctl balloon-set 0 >/dev/null || fail "$1: balloon-set 0"
	wait_line "$1" out '^probe: balloon deflated ok'
	exec 3>&-
	finish "$1"
}

finish() {
	wait_vmm "$1" 30
	expect_probe_pass "$1"
	[ -e "$sock" ] && fail "$1: socket file left behind"
	return 0
}

# --- inflate, RSS, statistics, deflate ---
start main ",transport=mmio,deflate-on-oom=on" "balloon.touch_mib=300"
wait_line main out '^probe: balloon ready touched_mib=300'
expect_line main out '^probe: balloon transport=mmio .*deflate_on_oom=1 reporting=0'
# A target of 0 changes nothing but stops the background pre-faulting (as any balloon-set
# does), so the RSS measured next is not still growing.
ctl balloon-set 0 >/dev/null || fail "balloon-set 0"
rc=0; out=$(ctl balloon-set 100000) || rc=$?
[ $rc = 1 ] && grep -q '"error":"mib must be 0 to 512' <<<"$out" || fail "oversized target: $out"
before=$(rss_kib)
[ "$before" -ge $((300 * 1024)) ] || fail "RSS ${before} KiB before inflating: the touched 300 MiB are not resident"
out=$(ctl balloon-set 128) || fail "balloon-set 128: $out"
actual=0
for _ in $(seq 300); do
	out=$(ctl status) || fail "status: $out"
	actual=$(sed -n 's/.*"actual_mib":\([0-9]*\).*/\1/p' <<<"$out")
	[ "$actual" = 128 ] && break
	sleep 0.1
done
[ "$actual" = 128 ] || { show main; fail "balloon actual ${actual} MiB, expected 128: $out"; }
wait_line main out '^probe: balloon actual_pages=32768$'
after=$(rss_kib)
drop=$(((before - after) / 1024))
echo "RSS ${before} KiB -> ${after} KiB (dropped ${drop} MiB)"
[ "$drop" -ge 100 ] || fail "RSS dropped by only ${drop} MiB after inflating 128 MiB"
grep -q '"released_pages":32768' <<<"$out" || fail "VMM does not count 32768 released pages: $out"
grep -q '"deflate_on_oom":true' <<<"$out" || fail "deflate_on_oom not shown: $out"
for _ in $(seq 50); do
	out=$(ctl status)
	grep -q '"stats":{[^}]*"free-memory":[1-9]' <<<"$out" && break
	sleep 0.1
done
grep -q '"total-memory":[1-9]' <<<"$out" || fail "no guest statistics: $out"
ctl balloon-set 0 >/dev/null || fail "balloon-set 0"
wait_line main out '^probe: balloon deflated ok'
finish main

# --- free page reporting (over virtio-pci): the probe reports its untouched RAM once ---
start report ",transport=pci,free-page-reporting=on" "balloon.touch_mib=16 balloon.report=1"
wait_line report out '^probe: balloon reported_mib=[1-9]'
expect_line report out 'transport=pci .*deflate_on_oom=0 reporting=1'
out=$(ctl status)
grep -q '"reported_bytes":[1-9]' <<<"$out" || fail "no reported bytes: $out"
grep -q '"free_page_reporting":true' <<<"$out" || fail "reporting not shown: $out"
ctl balloon-set 8 >/dev/null || fail "balloon-set 8"
wait_line report out '^probe: balloon actual_pages=2048$'
ctl balloon-set 0 >/dev/null || fail "balloon-set 0"
wait_line report out '^probe: balloon deflated ok'
finish report

# --- deflate on OOM (virtio-pci): the balloon gives 64 MiB back below its target ---
oom_start oom ",transport=pci,deflate-on-oom=on"
expect_line oom out '^probe: balloon transport=pci .*deflate_on_oom=1 '
wait_line oom out '^probe: balloon oom (deflated_pages|unavailable)'
expect_line oom out '^probe: balloon oom start free_pages=[1-9][0-9]* balloon_pages=32768 want_pages=[0-9]+ deflate_on_oom=1$'
# It got all it wanted (every free page and 64 MiB more), exactly 64 MiB of it from the balloon.
want=$(sed -n 's/^probe: balloon oom start .*want_pages=\([0-9]*\).*/\1/p' "$TEST_TMP/oom.out")
line=$(grep -E '^probe: balloon oom deflated_pages' "$TEST_TMP/oom.out")
[ "$line" = "probe: balloon oom deflated_pages=16384 reused_ok=1 allocated_pages=$want short_pages=0 actual_pages=16384" ] ||
	{ show oom; fail "oom: expected 16384 pages deflated and reused: $line"; }
echo "$line"
# The device saw the deflation below its target and `actual` follows; the target is unchanged.
out=$(ctl status) || fail "oom: status: $out"
for kv in target_pages=32768 actual_pages=16384 released_pages=16384 deflated_pfns=16384 \
	inflated_pfns=32768 invalid_pfns=0; do
	[ "$(json_num "$out" "${kv%=*}")" = "${kv#*=}" ] || fail "oom: status ${kv%=*} is not ${kv#*=}: $out"
done
grep -q '"needs_reset":false' <<<"$out" || fail "oom: device needs reset: $out"
# The guest wrote every word of the returned pages: the VMM holds them again.
after=$(rss_kib)
rise=$(((after - before) / 1024))
echo "oom: RSS ${before} KiB -> ${after} KiB (rose ${rise} MiB after 64 MiB came back)"
[ "$rise" -ge 60 ] || fail "oom: RSS rose by only ${rise} MiB after the guest reused 64 MiB"
oom_end oom

# --- no deflate-on-oom (virtio-mmio): the probe must not go below the target ---
oom_start nooom ",transport=mmio"
expect_line nooom out '^probe: balloon transport=mmio .*deflate_on_oom=0 '
wait_line nooom out '^probe: balloon oom (deflated_pages|unavailable)'
expect_line nooom out '^probe: balloon oom unavailable deflate_on_oom=0 allocated_pages=[1-9][0-9]* short_pages=16384 actual_pages=32768$'
grep -E '^probe: balloon oom unavailable' "$TEST_TMP/nooom.out"
kill -0 $VMM_PID 2>/dev/null || fail "nooom: the VMM is gone"
out=$(ctl status) || fail "nooom: status: $out"
for kv in target_pages=32768 actual_pages=32768 released_pages=32768 deflated_pfns=0; do
	[ "$(json_num "$out" "${kv%=*}")" = "${kv#*=}" ] || fail "nooom: status ${kv%=*} is not ${kv#*=}: $out"
done
after=$(rss_kib)
rise=$(((after - before) / 1024))
echo "nooom: RSS ${before} KiB -> ${after} KiB (rose ${rise} MiB, nothing came back)"
[ "$rise" -lt 32 ] || fail "nooom: RSS rose by ${rise} MiB although the balloon kept its pages"
oom_end nooom

# --- bad options ---
run_vmm badopt 10 --kernel "$FW/probe.elf" --balloon,bogus=1
expect_status badopt 2
expect_line badopt err "unknown --balloon option 'bogus'"
exit 0
