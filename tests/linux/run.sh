#!/usr/bin/env bash
# The nested stock-Linux suite: boots the L1 test VM (Debian's cloud kernel under QEMU TCG, which
# emulates AMD SVM, so minivmm gets a hardware-style /dev/kvm there) and runs the scenarios of
# tests/linux/scenarios.sh in it, each booting the same Debian kernel under minivmm.
#   tests/linux/run.sh [SCENARIO...]       (all of them by default)
# The L1 console goes to build/linux/nested.log; a failing scenario's L2 console and minivmm
# stderr are printed. Exit status 0 only when every scenario asked for passed.
#
# The L1 test VM itself is an emulated machine running an emulated hypervisor, and it has died
# under us (stopped, or gone silent) a few times in many runs, always mid-scenario and never in
# the same place (one caught whole: its kernel took an IPI right after VMRUN's exit, before KVM
# restored the host state, which GIF should have prevented, and overflowed its stack). A scenario that its L1 VM died under gets one more try in a fresh L1 VM, and
# says so on its result line along with the end of the dead VM's console; the scenarios that
# never ran go to the fresh VM too. (A scenario that fails inside a working L1 VM gets its second
# try there: scenarios.sh, run_all.) Every second try is printed with the first try's log.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${LINUX_TEST_OUT:-$ROOT/build/linux}
LIMIT=${LINUX_TEST_TIMEOUT:-1200}
# The L1 VM prints "@@ HEARTBEAT n" every 2 s from its init on (host-init.sh). Once one came,
# this long without another means the VM died or hung (the emulator's fault, see above): it is
# replaced at once, not after SILENCE. (The summary line prints the largest gap seen: 3 s in a
# full run on a loaded machine.)
HEARTBEAT=${LINUX_TEST_HEARTBEAT_LIMIT:-30}
# The first heartbeat comes about 8 s after QEMU starts (the L1 kernel's boot, under TCG): one
# that has not come this long after the start means the VM died or hung while booting.
BOOT_LIMIT=${LINUX_TEST_BOOT_LIMIT:-120}
# No scenario takes this long (each bounds its L2 guests to 300 s at most): an L1 VM that still
# beats but has not started or ended a scenario for this long is stuck.
SILENCE=${LINUX_TEST_SILENCE:-420}
# The emulated CPU, settable for experiments with the VM's deaths (e.g. max,vgif=off).
CPU=${LINUX_TEST_CPU:-max}
# Stand-ins for the harness's own test (tests/integration/test_nested_harness.sh): a fake QEMU
# that prints scenario results, and no image build.
QEMU=${LINUX_TEST_QEMU:-qemu-system-x86_64}
BUILD_IMAGES=${LINUX_TEST_BUILD_IMAGES:-$ROOT/tests/linux/build-images.sh}
command -v "$QEMU" >/dev/null ||
	{ echo "run.sh: $QEMU is not installed (scripts/install-deps.sh)" >&2; exit 1; }
# boot_l1 (the test VM's boot and its watch) and log_text, shared with ab-boot.sh.
L1_PIDFILE=$OUT/l1.pid
. "$ROOT/tests/linux/l1-vm.sh"

read -r -a all <<<"$(sed -n 's/^ALL_SCENARIOS="\(.*\)"/\1/p' "$ROOT/tests/linux/scenarios.sh")"
want=("$@")
[ ${#want[@]} -eq 0 ] && want=("${all[@]}")
for t in "${want[@]}"; do
	case " ${all[*]} " in
	*" $t "*) ;;
	*) echo "run.sh: unknown scenario '$t' (ALL_SCENARIOS in tests/linux/scenarios.sh: ${all[*]})" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"
"$BUILD_IMAGES" "$OUT" >/dev/null
echo "nested suite: ${#want[@]} scenarios in the L1 test VM (QEMU TCG; log: $OUT/nested.log)"
start=$(date +%s)

# result LOG NAME: the scenario's "PASS|FAIL|SKIP seconds [second-try]" from LOG, empty if none.
result() { grep -a "^@@ RESULT $2 " "$1" | tr -d '\r' | head -n 1 | cut -d' ' -f4- || true; }
# (The console's first line, a heartbeat, follows its escape sequences: no ^ anchor, to be safe.)
started() { grep -aq "@@ START $2"$'\r'"*\$" "$1"; }

# Stopped or not, run.sh leaves no test VM behind.
boot_job=""
# (Under set -e: nothing here may fail, or run.sh would exit 1 after a clean run.)
stop_l1() {
	if [ -n "$boot_job" ]; then kill -KILL "$boot_job" 2>/dev/null || true; fi
	if [ -f "$OUT/l1.pid" ]; then kill -KILL "$(cat "$OUT/l1.pid")" 2>/dev/null || true; fi
	rm -f "$OUT/l1.pid" "$OUT/l1.why"
}
trap stop_l1 EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failed=0
second=0
gap=0
pending=("${want[@]}")
retried=""
boot_retried=0
try=1
while [ ${#pending[@]} -gt 0 ]; do
	log=$OUT/nested.log
	[ $try -gt 1 ] && log=$OUT/nested.$try.log
	# In the background and waited for, so that a signal to run.sh is acted on at once.
	boot_l1 "$log" "$OUT/l1-initramfs.gz" "tests=$(IFS=,; echo "${pending[*]}")" >"$OUT/l1.why" &
	boot_job=$!
	wait $boot_job
	why=$(sed -n 1p "$OUT/l1.why")
	n=$(sed -n 2p "$OUT/l1.why")
	[ "${n:-0}" -gt "$gap" ] && gap=$n
	next=()
	for t in "${pending[@]}"; do
		r=$(result "$log" "$t")
		if [ -n "$r" ]; then
			set -- $r
			note=""
			case " $retried " in *" $t "*) note="  (second try: the L1 test VM died during the first)" ;; esac
			[ "${3:-}" = second-try ] && note="  (second try: the first failed; its log follows)"
			printf '%-5s %-28s %6s%s\n' "$1" "$t" "$2" "$note"
			if [ -n "$note" ]; then
				second=$((second + 1))
				[ "${3:-}" = second-try ] && [ "$1" = PASS ] &&
					log_text "$log" | sed -n "/@@ START $t\$/,/^@@ RETRY $t\$/s/^/    /p"
			fi
			if [ "$1" != PASS ]; then
				failed=$((failed + 1))
				# The scenario's section of the log: its checks, L2 consoles and minivmm stderr.
				log_text "$log" | sed -n "/@@ START $t\$/,/^@@ RESULT $t /s/^/    /p"
			fi
		elif started "$log" "$t"; then
			echo "the L1 test VM died during $t ($why); the end of $log:"
			log_text "$log" | tail -n 60 | sed 's/^/    /'
			case " $retried " in
			*" $t "*)
				printf 'FAIL  %-28s (the L1 test VM died during it twice)\n' "$t"
				failed=$((failed + 1))
				;;
			*)
				retried="$retried $t"
				next+=("$t")
				;;
			esac
		else
			next+=("$t")
		fi
	done
	if [ ${#next[@]} -gt 0 ] && [ ${#next[@]} = ${#pending[@]} ] && ! started "$log" "${next[0]}" &&
		[ $boot_retried = 0 ]; then
		# It died before its first scenario (the emulator's fault can strike while it boots):
		# one fresh boot per run.
		echo "the L1 test VM ran no scenario ($why): booting a fresh one; the end of $log:"
		log_text "$log" | tail -n 30 | sed 's/^/    /'
		boot_retried=1
	elif [ ${#next[@]} -gt 0 ] && [ ${#next[@]} = ${#pending[@]} ] && ! started "$log" "${next[0]}"; then
		# Nothing ran twice: the L1 VM itself does not work; another boot would not help.
		echo "the L1 test VM ran no scenario ($why); the end of $log:"
		log_text "$log" | tail -n 60 | sed 's/^/    /'
		for t in "${next[@]}"; do printf 'FAIL  %-28s (no result: the test VM never ran it)\n' "$t"; done
		failed=$((failed + ${#next[@]}))
		break
	fi
	pending=("${next[@]+"${next[@]}"}")
	try=$((try + 1))
done
echo "nested suite: $((${#want[@]} - failed)) of ${#want[@]} passed in $(($(date +%s) - start))s" \
	"($second had a second try; heartbeat gaps up to ${gap}s)"
[ $failed = 0 ]
