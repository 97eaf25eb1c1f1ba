#!/usr/bin/env bash
# tests/linux/ab-boot.sh itself (issue 35's A/B of minivmm and QEMU in the L1 test VM), with the
# fake QEMU of test_nested_harness.sh (fake_l1_qemu.sh) as the test VM and no image build: the
# boots alternate as documented, a silent boot and a triple fault land in their VMM's row with
# the rate per 100 and its 95% Wilson interval, the median first byte, a test VM that dies
# mid-boot is replaced by a fresh one that redoes that boot and counted apart (with the VMM it
# was running), the table is also in summary.txt, and --table redoes it from the files.
source "$(dirname "$0")/lib.sh"
runs_no_vmm

tag=$$
state=$TEST_TMP/state
mkdir -p "$state"
on_exit "pkill -KILL -f 'fake-l1-(hb-)?$tag' 2>/dev/null"
export LINUX_TEST_QEMU=$ROOT/tests/integration/fake_l1_qemu.sh LINUX_TEST_BUILD_IMAGES=true
export LINUX_TEST_OUT=$TEST_TMP/out FAKE_L1_STATE=$state FAKE_L1_TAG=$tag

out=$TEST_TMP/ab.out
# 3 rounds of 1 and 2 vCPUs: boot 5 is minivmm's with 1 vCPU (QEMU goes first in odd rounds),
# 9 QEMU's with 1, and the test VM dies in boot 6 (QEMU, 2 vCPUs) once.
rc=0
FAKE_AB_OUTCOMES="5=silent 9=triple" FAKE_AB_DIE_AT=6 timeout 60 "$ROOT/tests/linux/ab-boot.sh" \
	--boots 3 --cpus "1 2" >"$out" 2>&1 || rc=$?
has() { grep -q -- "$1" "$out" || { cat "$out"; fail "no '$1'"; }; }
[ $rc = 0 ] || { cat "$out"; fail "ab-boot.sh exited $rc"; }
has '^  boot 0 minivmm 1 ok '
has '^  boot 1 qemu 1 ok '
has '^  boot 4 qemu 1 ok '
has '^  boot 5 minivmm 1 silent '
has 'the L1 test VM died during 6 qemu 2 (its kernel panicked: fake, in an A/B boot)'
has 'Kernel panic - not syncing: fake, in an A/B boot'
has '^12 of 12 boots of linux in [0-9]*s, 2 L1 test VMs'
# minivmm, 1 vCPU: boots 0, 5 (silent), 8; 1 of 3 is 33.3 per 100, Wilson [6.1-79.2], 0 of 3
# [0.0-56.2]; first bytes 1.0 and 1.8 s (none from the silent one), walls 2.0, 2.5, 2.8 s.
has '^minivmm |     1 |     3 |   2 |      1 |      0 |     0 |    0 |    0 | 33.3 \[6.1-79.2\]    | 0.0 \[0.0-56.2\]     | 33.3 \[6.1-79.2\]    |      1.4s |   2.5s$'
# QEMU, 1 vCPU: boots 1, 4, 9 (triple); first bytes 1.1, 1.4, 1.9 s.
has '^qemu    |     1 |     3 |   2 |      0 |      1 |     0 |    0 |    0 | 0.0 \[0.0-56.2\]     | 33.3 \[6.1-79.2\]    | 33.3 \[6.1-79.2\]    |      1.4s |   2.4s$'
has '^minivmm |     2 |     3 |   3 |      0 |      0 |.*|      1.7s |   2.7s$'
# QEMU, 2 vCPUs: boots 3, 6 (redone in the fresh test VM), 11.
has '^qemu    |     2 |     3 |   3 |      0 |      0 |.*|      1.6s |   2.6s$'
has '^L1 test VM deaths (not counted above): 1 (during minivmm boots 0, during QEMU boots 1, outside a boot 0)$'
sum=$LINUX_TEST_OUT/ab/summary.txt
grep -q '^tests/linux/ab-boot.sh --boots 3 --cpus "1 2" --first 60 --limit 240 --machine microvm$' "$sum" ||
	{ cat "$sum"; fail "summary.txt has not the command"; }
grep -q '^qemu    |     1 |     3 |   2 |      0 |      1 |' "$sum" || { cat "$sum"; fail "summary.txt has not the table"; }
# Boot 6 is counted once, from the fresh test VM.
[ "$(grep -c '^6 ' "$LINUX_TEST_OUT/ab/boots.txt")" = 1 ] || fail "boot 6 counted $(grep -c '^6 ' "$LINUX_TEST_OUT/ab/boots.txt") times"
"$ROOT/tests/linux/ab-boot.sh" --table "$LINUX_TEST_OUT/ab/boots.txt" "$LINUX_TEST_OUT/ab/l1-deaths.txt" >"$TEST_TMP/table.out"
diff <(grep '|' "$TEST_TMP/table.out") <(grep '|' "$sum" | grep -v '^tests/') || fail "--table differs from the run's table"
# Bad options are refused.
rc=0
"$ROOT/tests/linux/ab-boot.sh" --cpus "1 x" >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "--cpus '1 x' exited $rc, expected 2"
echo "ab-boot harness: alternation, outcomes, Wilson intervals, medians, a dead test VM replaced: as specified"
