#!/usr/bin/env bash
# A stand-in for QEMU running the nested suite's L1 test VM (tests/linux/run.sh with
# LINUX_TEST_QEMU): prints each scenario of the -append "tests=a,b" list the way the real test
# VM does, each behaving as the environment says (space-separated scenario names):
#   FAKE_L1_FAIL       fails both tries               FAKE_L1_FLAKY     fails once, then passes
#   FAKE_L1_DIE        the VM dies in it, every time  FAKE_L1_DIE_ONCE  dies in it the first time
#   FAKE_L1_HANG       the VM goes silent in it (a process named fake-l1-$FAKE_L1_TAG sleeps)
# FAKE_L1_STATE is a directory remembering what already died once.
list=""
while [ $# -gt 0 ]; do
	[ "$1" = -append ] && list=$(tr ' ' '\n' <<<"$2" | sed -n 's/^tests=//p')
	shift
done
listed() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }
for t in ${list//,/ }; do
	echo "@@ START $t"
	if listed "$t" "${FAKE_L1_DIE:-}"; then
		echo "Kernel panic - not syncing: fake"
		exit 0
	fi
	if listed "$t" "${FAKE_L1_DIE_ONCE:-}" && [ ! -e "$FAKE_L1_STATE/died-$t" ]; then
		touch "$FAKE_L1_STATE/died-$t"
		echo "Kernel panic - not syncing: fake, once"
		exit 0
	fi
	listed "$t" "${FAKE_L1_HANG:-}" && exec -a "fake-l1-$FAKE_L1_TAG" sleep 1000
	if listed "$t" "${FAKE_L1_FAIL:-}"; then
		printf 'CHECK FAILED: %s try 1\n@@ RETRY %s\nCHECK FAILED: %s try 2\n' "$t" "$t" "$t"
		echo "@@ RESULT $t FAIL 0s second-try"
	elif listed "$t" "${FAKE_L1_FLAKY:-}"; then
		printf 'CHECK FAILED: %s first try\n@@ RETRY %s\n' "$t" "$t"
		echo "@@ RESULT $t PASS 0s second-try"
	else
		echo "@@ RESULT $t PASS 0s"
	fi
done
echo "@@ DONE"
