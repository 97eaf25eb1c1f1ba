#!/usr/bin/env bash
# virtio-balloon driven through the control socket: the probe touches 300 MiB, the balloon
# target goes to 128 MiB and the VMM's RSS must drop by at least 100 MiB; back to 0 the probe
# must be able to use the memory again. Also: deflate-on-oom is offered when asked, free page
# reporting releases the range the probe reports, statistics arrive, bad targets are refused.
source "$(dirname "$0")/lib.sh"

sock=$TEST_TMP/vm.sock
ctl() { "$MINIVMM" ctl --sock "$sock" "$@"; }

wait_line() {
	for _ in $(seq "${4:-300}"); do
		grep -Eq -- "$3" "$TEST_TMP/$1.$2" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	show "$1"
	fail "$1: no line matching /$3/ in $2"
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }

# start NAME BALLOON-OPTIONS GUEST-WORDS: the VMM in the background, console in NAME.out.
start() {
	"$MINIVMM" --kernel "$FW/probe.elf" --memory 512M "--balloon$2" \
		--api-sock "$sock" --cmdline "test=balloon balloon.timeout=120 $3" \
		</dev/null >"$TEST_TMP/$1.out" 2>"$TEST_TMP/$1.err" &
	pid=$!
	on_exit "kill -9 $pid 2>/dev/null"
}

finish() {
	VMM_STATUS=0
	timeout 30 tail --pid=$pid -f /dev/null || fail "$1: the VMM did not finish"
	wait $pid || VMM_STATUS=$?
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

# --- bad options ---
run_vmm badopt 10 --kernel "$FW/probe.elf" --balloon,bogus=1
expect_status badopt 2
expect_line badopt err "unknown --balloon option 'bogus'"
exit 0
