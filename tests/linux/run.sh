#!/usr/bin/env bash
# The nested stock-Linux suite: boots the L1 test VM (Debian's cloud kernel under QEMU TCG, which
# emulates AMD SVM, so minivmm gets a hardware-style /dev/kvm there) and runs the scenarios of
# tests/linux/scenarios.sh in it, each booting the same Debian kernel under minivmm.
#   tests/linux/run.sh [SCENARIO...]       (all of them by default)
# The whole L1 console goes to build/linux/nested.log; a failing scenario's L2 console and
# minivmm stderr are printed. Exit status 0 only when every scenario asked for passed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${LINUX_TEST_OUT:-$ROOT/build/linux}
LIMIT=${LINUX_TEST_TIMEOUT:-1200}
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "run.sh: qemu-system-x86_64 is not installed (scripts/install-deps.sh)" >&2; exit 1; }

"$ROOT/tests/linux/build-images.sh" "$OUT" >/dev/null
want=("$@")
if [ ${#want[@]} -eq 0 ]; then
	read -r -a want <<<"$(sed -n 's/^ALL_SCENARIOS="\(.*\)"/\1/p' "$ROOT/tests/linux/scenarios.sh")"
fi
list=$(IFS=,; echo "${want[*]}")
log=$OUT/nested.log
echo "nested suite: ${#want[@]} scenarios in the L1 test VM (QEMU TCG; log: $log)"
start=$(date +%s)
rc=0
# -m 6G: the --memory scenario gives the L2 guest more than 3 GiB (RAM across the PCI hole).
timeout --signal=KILL "$LIMIT" qemu-system-x86_64 -accel tcg -cpu max -m 6G -smp 2 -nographic \
	-no-reboot -kernel "$OUT/vmlinuz" -initrd "$OUT/l1-initramfs.gz" \
	-append "console=ttyS0 quiet panic=-1 tests=$list" </dev/null >"$log" 2>&1 || rc=$?
[ $rc = 137 ] && echo "the L1 test VM did not finish within ${LIMIT}s"

failed=0
for t in "${want[@]}"; do
	line=$(grep -a "^@@ RESULT $t " "$log" | tr -d '\r' | head -n 1 || true)
	if [ -z "$line" ]; then
		printf 'FAIL  %-28s (no result: the test VM stopped before it)\n' "$t"
		failed=$((failed + 1))
		continue
	fi
	set -- $line
	printf '%-5s %-28s %6s\n' "$4" "$t" "$5"
	if [ "$4" != PASS ]; then
		failed=$((failed + 1))
		# The scenario's section of the log: its checks, L2 consoles and minivmm stderr.
		sed -n "/^@@ START $t\r\?\$/,/^@@ RESULT $t /p" "$log" | tr -d '\r' | sed 's/^/    /'
	fi
done
echo "nested suite: $((${#want[@]} - failed)) of ${#want[@]} passed in $(($(date +%s) - start))s"
[ $failed = 0 ]
