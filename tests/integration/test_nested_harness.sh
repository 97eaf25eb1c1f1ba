#!/usr/bin/env bash
# tests/linux/run.sh itself, with a fake QEMU (fake_l1_qemu.sh) in place of the L1 test VM and no
# image build: its exit status (0 only when every scenario passed, also after a second try), a
# scenario's second try and its printed first try, a test VM that dies under a scenario replaced
# by a fresh one that reruns it and the rest, a silent test VM killed (not left running), unknown
# scenario names refused, and run.sh stopped by SIGTERM taking the test VM with it.
source "$(dirname "$0")/lib.sh"

tag=$$
state=$TEST_TMP/state
mkdir -p "$state"
on_exit "pkill -KILL -f 'fake-l1-$tag' 2>/dev/null"
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
out_has clean 'nested suite: 2 of 2 passed in [0-9]*s (0 had a second try)'

nested fail FAKE_L1_FAIL=reboot -- console reboot poweroff
status_is fail 1
out_has fail '^FAIL  reboot .*second try'
out_has fail 'CHECK FAILED: reboot try 2'
out_has fail '^PASS  poweroff'

nested flaky FAKE_L1_FLAKY=reboot -- reboot poweroff
status_is flaky 0
out_has flaky '^PASS  reboot .*(second try: the first failed; its log follows)'
out_has flaky 'CHECK FAILED: reboot first try'

nested dies_once FAKE_L1_DIE_ONCE=reboot -- console reboot poweroff
status_is dies_once 0
out_has dies_once 'the L1 test VM died during reboot (QEMU exited without the test VM finishing)'
out_has dies_once 'Kernel panic - not syncing: fake, once'
out_has dies_once '^PASS  reboot .*(second try: the L1 test VM died during the first)'
out_has dies_once '^PASS  poweroff'
out_has dies_once 'nested suite: 3 of 3 passed'

nested dies FAKE_L1_DIE=reboot -- reboot poweroff
status_is dies 1
out_has dies '^FAIL  reboot .*(the L1 test VM died during it twice)'
out_has dies '^PASS  poweroff'

nested hangs FAKE_L1_HANG=reboot -- reboot poweroff
status_is hangs 1
out_has hangs 'died during reboot (no scenario started or ended for 2s)'
out_has hangs '^PASS  poweroff'
no_fake_left hangs

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
echo "nested harness: exit statuses, second tries, dead and silent test VMs, SIGTERM: as specified"
