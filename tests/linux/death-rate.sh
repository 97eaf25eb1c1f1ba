#!/usr/bin/env bash
# How often the nested suite's L1 test VM dies (issue 18): run the whole suite RUNS times,
# alternating between the QEMU -cpu settings given (LINUX_TEST_CPU, default just "max"), and
# count per setting the L1 deaths ("the L1 test VM died during S (why)" / "ran no scenario"),
# the second tries after a failed check, and the suite's time. Needs an otherwise idle machine:
# a loaded one starves the emulator and shows deaths that are not the emulator's fault.
#
# usage: tests/linux/death-rate.sh RUNS [CPU...]     e.g. death-rate.sh 10 max max,vgif=off
# Logs: build/linux/death-rate/RUN-CPU.log; a summary table at the end (also in summary.txt).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:?usage: death-rate.sh RUNS [CPU...]}
shift
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "death-rate: RUNS must be a positive integer" >&2; exit 2; }
cpus=("$@")
[ ${#cpus[@]} -gt 0 ] || cpus=(max)
out=$ROOT/build/linux/death-rate
mkdir -p "$out"
make -C "$ROOT" -s all >/dev/null || { echo "death-rate: make all failed" >&2; exit 1; }
declare -A runs deaths boot_deaths retries scen secs
for ((i = 1; i <= RUNS; i++)); do
	cpu=${cpus[$(((i - 1) % ${#cpus[@]}))]}
	log=$out/$i-${cpu//[^A-Za-z0-9_.=-]/_}.log
	t0=$SECONDS
	LINUX_TEST_CPU=$cpu MINIVMM=$ROOT/build/minivmm "$ROOT/tests/linux/run.sh" >"$log" 2>&1
	rc=$?
	t=$((SECONDS - t0))
	d=$(grep -c '^the L1 test VM died during' "$log")
	b=$(grep -c '^the L1 test VM ran no scenario' "$log")
	r=$(grep -c '(second try: the first failed' "$log")
	n=$(grep -cE '^(PASS|FAIL|SKIP) ' "$log")
	runs[$cpu]=$((${runs[$cpu]:-0} + 1))
	deaths[$cpu]=$((${deaths[$cpu]:-0} + d))
	boot_deaths[$cpu]=$((${boot_deaths[$cpu]:-0} + b))
	retries[$cpu]=$((${retries[$cpu]:-0} + r))
	scen[$cpu]=$((${scen[$cpu]:-0} + n))
	secs[$cpu]="${secs[$cpu]:-} $t"
	echo "run $i/$RUNS -cpu $cpu: exit $rc, ${t}s, $n scenarios, $d died in a scenario, $b at boot, $r second tries after a failed check"
	grep '^the L1 test VM' "$log" | sed 's/^/    /'
done
{
	echo "-cpu setting | runs | scenarios | L1 deaths in a scenario | per 100 scenarios | deaths at boot | second tries (failed check) | suite seconds"
	for cpu in "${cpus[@]}"; do
		[ -n "${runs[$cpu]:-}" ] || continue
		per=$(awk -v d="${deaths[$cpu]}" -v n="${scen[$cpu]}" 'BEGIN { printf "%.1f", n ? 100 * d / n : 0 }')
		echo "$cpu | ${runs[$cpu]} | ${scen[$cpu]} | ${deaths[$cpu]} | $per | ${boot_deaths[$cpu]} | ${retries[$cpu]} |${secs[$cpu]}"
		unset "runs[$cpu]"
	done
} | tee "$out/summary.txt"
