#!/usr/bin/env bash
# A stand-in for QEMU running the nested suite's L1 test VM (tests/linux/run.sh with
# LINUX_TEST_QEMU): beats ("@@ HEARTBEAT n" every 0.2 s, from a process named
# fake-l1-hb-$FAKE_L1_TAG) and prints each scenario of the -append "tests=a,b" list the way the
# real test VM does, each behaving as the environment says (space-separated scenario names):
#   FAKE_L1_FAIL       fails both tries               FAKE_L1_FLAKY     fails once, then passes
#   FAKE_L1_DIE        the VM dies in it, every time  FAKE_L1_DIE_ONCE  dies in it the first time
#   FAKE_L1_HANG       the VM goes silent in it the first time, heartbeat and all (a process
#                      named fake-l1-$FAKE_L1_TAG sleeps)
#   FAKE_L1_STUCK      the same, but the heartbeat goes on (the scenario hangs, not the VM)
#   FAKE_L1_MUTE_BOOT  (any value) the first VM hangs while booting: no heartbeat, no scenario
# A failing try's first check line is written in two parts with a heartbeat between them, as
# the real console can show it. FAKE_L1_STATE is a directory remembering what already died once.
# With ab.boots= on its command line it is the A/B test VM of tests/linux/ab-boot.sh instead
# (tests/linux/ab-l1.sh): it prints the boots' lines in the same order, each ok (first_ms=1000 +
# 100 * its number) unless FAKE_AB_OUTCOMES says otherwise ("5=silent 9=triple"); FAKE_AB_DIE_AT=I:
# the VM dies after starting boot I, the first time.
# once NAME: true the first time it is asked about NAME.
once() { [ ! -e "$FAKE_L1_STATE/$1" ] && touch "$FAKE_L1_STATE/$1"; }
list=""
append=""
while [ $# -gt 0 ]; do
	[ "$1" = -append ] && append=$2 && list=$(tr ' ' '\n' <<<"$2" | sed -n 's/^tests=//p')
	shift
done
[ -n "${FAKE_L1_MUTE_BOOT:-}" ] && once mute-boot && exec -a "fake-l1-$FAKE_L1_TAG" sleep 1000
# The heartbeat stops with this process (killed by run.sh) or when killed itself. Its first beat
# comes before any scenario, as in the real test VM.
echo "@@ HEARTBEAT 0"
bash -c 'n=0; while kill -0 "$1" 2>/dev/null; do n=$((n + 1)); echo "@@ HEARTBEAT $n"; sleep 0.2; done' \
	"fake-l1-hb-$FAKE_L1_TAG" $$ &
beat=$!
stop_beat() { kill "$beat"; wait "$beat" 2>/dev/null || true; }
listed() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }
if [[ "$append" == *ab.boots=* ]]; then
	arg() { tr ' ' '\n' <<<"$append" | sed -n "s/^$1=//p"; }
	cpus=($(arg ab.cpus | tr , ' '))
	n=${#cpus[@]}
	total=$(($(arg ab.boots) * n * 2))
	for ((i = $(arg ab.from); i < total; i++)); do
		r=$((i / (2 * n)))
		c=${cpus[$(((i / 2) % n))]}
		vmm=minivmm
		[ $(((i + r) % 2)) = 1 ] && vmm=qemu
		echo "@@ AB-START $i $vmm $c"
		if [ "${FAKE_AB_DIE_AT:-}" = $i ] && once "ab-died-$i"; then
			echo "Kernel panic - not syncing: fake, in an A/B boot"
			stop_beat
			exit 0
		fi
		outcome=ok
		for o in ${FAKE_AB_OUTCOMES:-}; do [ "${o%%=*}" = $i ] && outcome=${o#*=}; done
		fb=$((1000 + 100 * i))
		[ $outcome = silent ] && fb=-1
		echo "@@ AB $i $vmm $c $outcome first_ms=$fb marker_ms=-1 wall_ms=$((2000 + 100 * i)) exit=0"
		echo "   first line: L2: BOOTED boot"
	done
	stop_beat
	echo "@@ DONE"
	exit 0
fi
for t in ${list//,/ }; do
	echo "@@ START $t"
	if listed "$t" "${FAKE_L1_DIE:-}"; then
		echo "Kernel panic - not syncing: fake"
		stop_beat
		exit 0
	fi
	if listed "$t" "${FAKE_L1_DIE_ONCE:-}" && once "died-$t"; then
		echo "Kernel panic - not syncing: fake, once"
		stop_beat
		exit 0
	fi
	listed "$t" "${FAKE_L1_HANG:-}" && once "hung-$t" && stop_beat &&
		exec -a "fake-l1-$FAKE_L1_TAG" sleep 1000
	listed "$t" "${FAKE_L1_STUCK:-}" && once "stuck-$t" && exec -a "fake-l1-$FAKE_L1_TAG" sleep 1000
	if listed "$t" "${FAKE_L1_FAIL:-}"; then
		printf 'CHECK FAILED: %s tr' "$t"
		echo "@@ HEARTBEAT 0"
		printf 'y 1\n@@ RETRY %s\nCHECK FAILED: %s try 2\n' "$t" "$t"
		echo "@@ RESULT $t FAIL 0s second-try"
	elif listed "$t" "${FAKE_L1_FLAKY:-}"; then
		printf 'CHECK FAILED: %s first try\n@@ RETRY %s\n' "$t" "$t"
		echo "@@ RESULT $t PASS 0s second-try"
	else
		echo "@@ RESULT $t PASS 0s"
	fi
done
stop_beat
echo "@@ DONE"
