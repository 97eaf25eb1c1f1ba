#!/usr/bin/env bash
# run.sh itself: a test that hangs fails as "timed out after N s" instead of hanging the suite,
# its cleanup (lib.sh's EXIT trap) still runs, also while it waits on a nested `timeout`, and
# nothing it started outlives it; one that ignores SIGTERM is killed after the grace period.
# run.sh stopped itself (SIGTERM, or Ctrl-C) stops the running test the same way first.
source "$(dirname "$0")/lib.sh"
runs_no_vmm

d=$TEST_TMP/suite
mkdir "$d"
on_exit "[ -f '$d/sleep.pid' ] && kill -9 \$(cat '$d/sleep.pid') 2>/dev/null"
on_exit "[ -f '$d/stubborn.pid' ] && kill -9 \$(cat '$d/stubborn.pid') 2>/dev/null"
cat >"$d/test_a_pass.sh" <<'T'
exit 0
T
cat >"$d/test_b_hang.sh" <<T
source "$ROOT/tests/integration/lib.sh"
on_exit "touch '$d/cleaned'"
echo "hang: started"
timeout 300 bash -c 'echo \$\$ >"$d/sleep.pid"; exec sleep 300'
echo "hang: not reached"
T
cat >"$d/test_c_stubborn.sh" <<T
trap '' TERM
echo \$\$ >"$d/stubborn.pid"
while :; do sleep 0.2; done
T
cat >"$d/test_d_skip.sh" <<'T'
echo "SKIP: nothing to do"
exit 77
T

rc=0
start=$SECONDS
out=$(MINIVMM_TEST_TIMEOUT=2 MINIVMM_TEST_GRACE=2 timeout 60 "$ROOT/tests/integration/run.sh" \
	"$d"/test_*.sh 2>&1) || rc=$?
took=$((SECONDS - start))
echo "$out"
[ $rc = 1 ] || fail "run.sh exited $rc, expected 1 (a failure), after $took s"
grep -q '^PASS  test_a_pass ' <<<"$out" || fail "test_a_pass not reported as passed"
grep -q '^SKIP  test_d_skip .*SKIP: nothing to do' <<<"$out" || fail "test_d_skip not reported"
grep -A1 '^FAIL  test_b_hang ' <<<"$out" | grep -q 'timed out after 2 s' ||
	fail "test_b_hang not reported as timed out"
grep -A1 '^FAIL  test_c_stubborn ' <<<"$out" | grep -q 'timed out after 2 s' ||
	fail "test_c_stubborn not reported as timed out"
grep -q 'hang: started' <<<"$out" || fail "the hung test's output is missing"
grep -q 'hang: not reached' <<<"$out" && fail "the hung test went on after its time ran out"
grep -q '^integration: 1 passed, 2 failed, 1 skipped$' <<<"$out" || fail "wrong summary"
[ -f "$d/cleaned" ] || fail "the timed-out test's cleanup did not run"
for p in sleep stubborn; do
	[ -s "$d/$p.pid" ] || fail "$p never started"
	! kill -0 "$(cat "$d/$p.pid")" 2>/dev/null || fail "the $p process outlived run.sh"
done
# 2 + 2 s (+ grace) for the two that hang, not their own 300 s
[ $took -lt 30 ] || fail "run.sh took $took s"

# run.sh stopped while the hung test runs
rm -f "$d/cleaned" "$d/sleep.pid"
"$ROOT/tests/integration/run.sh" "$d/test_b_hang.sh" >"$TEST_TMP/stopped.out" 2>&1 &
runner=$!
on_exit "kill -9 $runner 2>/dev/null"
for _ in $(seq 100); do
	[ -s "$d/sleep.pid" ] && break
	sleep 0.1
done
[ -s "$d/sleep.pid" ] || fail "the hung test did not start under run.sh"
kill -TERM $runner
rc=0
wait $runner || rc=$?
[ $rc = 130 ] || fail "run.sh stopped by SIGTERM exited $rc, expected 130"
[ -f "$d/cleaned" ] || fail "run.sh stopped: the running test's cleanup did not run"
! kill -0 "$(cat "$d/sleep.pid")" 2>/dev/null || fail "run.sh stopped: the test's sleep outlived it"
exit 0
