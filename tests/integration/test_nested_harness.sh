#!/usr/bin/env bash
# tests/linux/run.sh itself, with a fake QEMU (fake_l1_qemu.sh) in place of the L1 test VM and no
# image build: its exit status (0 only when every scenario passed, also after a second try), a
# scenario's second try and its printed first try, a test VM that dies under a scenario replaced
# by a fresh one that reruns it and the rest, a test VM that stops its heartbeat ended within the
# heartbeat limit and killed (not left running), one that beats but is stuck in a scenario ended
# by the silence limit, heartbeats kept out of the printed logs, unknown scenario names refused,
# and run.sh stopped by SIGTERM taking the test VM with it.
source "$(dirname "$0")/lib.sh"
runs_no_vmm

tag=$$
state=$TEST_TMP/state
mkdir -p "$state"
on_exit "pkill -KILL -f 'fake-l1-(hb-)?$tag' 2>/dev/null"
export LINUX_TEST_QEMU=$ROOT/tests/integration/fake_l1_qemu.sh LINUX_TEST_BUILD_IMAGES=true
export LINUX_TEST_OUT=$TEST_TMP/out FAKE_L1_STATE=$state FAKE_L1_TAG=$tag LINUX_TEST_SILENCE=2

# nested NAME [ENV=VALUE...] -- SCENARIO...: run.sh's output in $TEST_TMP/NAME.out, status in rc.
nested() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	rc=0
	env "${envs[@]}" timeout 60 "$ROOT/tests/linux/run.sh" "$@" >"$TEST_TMP/$name.out" 2>&1 || rc=$?
}
out_has() { grep -q -- "$2" "$TEST_TMP/$1.out" || { cat "$TEST_TMP/$1.out"; fail "$1: no '$2'"; }; }
status_is() { [ "$rc" = "$2" ] || { cat "$TEST_TMP/$1.out"; fail "$1: run.sh exited $rc, expected $2"; }; }
no_fake_left() { ! pgrep -f "fake-l1-$tag" >/dev/null || fail "$1: the silent test VM outlived run.sh"; }

nested clean -- console reboot
status_is clean 0
out_has clean '^PASS  reboot'
out_has clean 'nested suite: 2 of 2 passed in [0-9]*s (0 had a second try; heartbeat gaps up to [0-9]s)'

nested fail FAKE_L1_FAIL=reboot -- console reboot poweroff
status_is fail 1
out_has fail '^FAIL  reboot .*second try'
out_has fail 'CHECK FAILED: reboot try 1$'
out_has fail 'CHECK FAILED: reboot try 2'
! grep -q HEARTBEAT "$TEST_TMP/fail.out" || { cat "$TEST_TMP/fail.out"; fail "fail: a heartbeat printed"; }
out_has fail '^PASS  poweroff'

nested flaky FAKE_L1_FLAKY=reboot -- reboot poweroff
status_is flaky 0
out_has flaky '^PASS  reboot .*(second try: the first failed; its log follows)'
out_has flaky 'CHECK FAILED: reboot first try'

nested dies_once FAKE_L1_DIE_ONCE=reboot -- console reboot poweroff
status_is dies_once 0
out_has dies_once 'the L1 test VM died during reboot (its kernel panicked: fake, once)'
out_has dies_once 'Kernel panic - not syncing: fake, once'
out_has dies_once '^PASS  reboot .*(second try: the L1 test VM died during the first)'
out_has dies_once '^PASS  poweroff'
out_has dies_once 'nested suite: 3 of 3 passed'

nested dies FAKE_L1_DIE=reboot -- reboot poweroff
status_is dies 1
out_has dies '^FAIL  reboot .*(the L1 test VM died during it twice)'
out_has dies '^PASS  poweroff'

# A test VM that stops beating is ended within the heartbeat limit, long before the silence one.
t0=$SECONDS
nested silent LINUX_TEST_HEARTBEAT_LIMIT=3 LINUX_TEST_SILENCE=30 FAKE_L1_HANG=reboot -- reboot poweroff
status_is silent 0
out_has silent 'died during reboot (no heartbeat for 3s)'
out_has silent '^PASS  reboot .*(second try: the L1 test VM died during the first)'
out_has silent '^PASS  poweroff'
[ $((SECONDS - t0)) -lt 15 ] || fail "silent: run.sh took $((SECONDS - t0))s (heartbeat limit 3s)"
no_fake_left silent

# One that never beats (it hung while booting) is replaced after the boot limit.
t0=$SECONDS
nested mute_boot LINUX_TEST_BOOT_LIMIT=3 LINUX_TEST_SILENCE=30 FAKE_L1_MUTE_BOOT=1 -- reboot poweroff
status_is mute_boot 0
out_has mute_boot 'ran no scenario (no heartbeat within 3s of its start): booting a fresh one'
out_has mute_boot '^PASS  reboot'
out_has mute_boot '^PASS  poweroff'
[ $((SECONDS - t0)) -lt 15 ] || fail "mute_boot: run.sh took $((SECONDS - t0))s (boot limit 3s)"
no_fake_left mute_boot

# One that beats but is stuck in a scenario is ended by the silence limit: heartbeats are no
# scenario progress.
nested stuck LINUX_TEST_HEARTBEAT_LIMIT=3 LINUX_TEST_SILENCE=5 LINUX_TEST_TIMEOUT=15 \
	FAKE_L1_STUCK=reboot -- reboot poweroff
status_is stuck 0
out_has stuck 'died during reboot (no scenario started or ended for 5s)'
out_has stuck '^PASS  reboot .*(second try: the L1 test VM died during the first)'
out_has stuck '^PASS  poweroff'
no_fake_left stuck

nested unknown -- console nosuch
status_is unknown 2
out_has unknown "unknown scenario 'nosuch'"

# SIGTERM while a scenario runs: run.sh exits 143 and the test VM is gone with it.
FAKE_L1_HANG=console LINUX_TEST_SILENCE=100 "$ROOT/tests/linux/run.sh" console \
	>"$TEST_TMP/term.out" 2>&1 &
pid=$!
on_exit "kill -KILL $pid 2>/dev/null"
for _ in $(seq 100); do pgrep -f "fake-l1-$tag" >/dev/null && break; sleep 0.1; done
pgrep -f "fake-l1-$tag" >/dev/null || fail "term: the fake test VM never started"
kill -TERM $pid
rc=0
wait $pid || rc=$?
status_is term 143
no_fake_left term
echo "nested harness: exit statuses, second tries, dead, silent and stuck test VMs, SIGTERM: as specified"
