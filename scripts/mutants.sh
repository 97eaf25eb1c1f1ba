#!/usr/bin/env bash
# Mutation check (`make mutants`, not part of `make test`): each mutant in tests/mutants.txt (or
# $MUTANTS_FILE) is applied on its own to a scratch copy of the tree in /tmp (never this tree),
# the VMM, the firmware and the unit tests are rebuilt there, and the mutant's test command runs
# (from the copy's root, under `timeout`); it must fail. First every distinct test command runs
# once against the unmutated copy and must pass, or killing a mutant would prove nothing.
#
# Usage: scripts/mutants.sh [ID...]   (default: every mutant in the file)
# Environment: MUTANTS_FILE, MUTANT_TIMEOUT (seconds per test run, default 600),
#              MUTANTS_JOBS (make -j, default 2).
# Prints a table, id | file | test | result, where result is KILLED (the test failed; "timed
# out" when it ran out of time), SURVIVED (it passed), SKIPPED (it exited 77), NOT APPLIED (a
# text to replace does not occur exactly once), BUILD FAILED or BASELINE FAILED (the test fails
# without the mutant). Exits 0 only when every mutant asked for was KILLED.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILE=${MUTANTS_FILE:-$ROOT/tests/mutants.txt}
LIMIT=${MUTANT_TIMEOUT:-600}
JOBS=${MUTANTS_JOBS:-2}
[ -r "$FILE" ] || { echo "mutants: cannot read $FILE" >&2; exit 2; }

# --- parse the file into arrays: M_ID[i] M_FILE[i] M_TEST[i], M_FIND[i,k] M_REPL[i,k] M_N[i]
declare -a M_ID M_FILE M_TEST M_N
declare -A M_FIND M_REPL
n=-1
bad() { echo "mutants: $FILE:$lineno: $*" >&2; exit 2; }
unescape() { # \n newline, \t tab, \\ backslash; anything else as it is
	local v=${1//'\\'/$'\x01'}
	v=${v//'\n'/$'\n'}
	v=${v//'\t'/$'\t'}
	printf '%s' "${v//$'\x01'/\\}"
}
lineno=0 inblock=0
while IFS= read -r line || [ -n "$line" ]; do
	lineno=$((lineno + 1))
	case $line in '#'*) continue ;; esac
	if [ -z "${line//[[:space:]]/}" ]; then
		inblock=0
		continue
	fi
	key=${line%%:*}
	[ "$key" != "$line" ] || bad "expected 'key: value'"
	val=${line#*:}
	val=${val# } # one space after the colon is the separator
	if [ $inblock = 0 ]; then
		[ "$key" = id ] || bad "a mutant starts with 'id:'"
		inblock=1 n=$((n + 1))
		M_N[n]=0 M_FILE[n]='' M_TEST[n]=''
	fi
	case $key in
	id) M_ID[n]=$val ;;
	file) M_FILE[n]=$val ;;
	test) M_TEST[n]=$val ;;
	find) M_FIND[$n,${M_N[n]}]=$(unescape "$val") M_N[n]=$((M_N[n] + 1)) ;;
	replace)
		[ "${M_N[n]}" -gt 0 ] && [ -z "${M_REPL[$n,$((M_N[n] - 1))]+x}" ] ||
			bad "'replace:' must follow its 'find:'"
		M_REPL[$n,$((M_N[n] - 1))]=$(unescape "$val") ;;
	*) bad "unknown key '$key'" ;;
	esac
done <"$FILE"
for ((i = 0; i <= n; i++)); do
	lineno="mutant ${M_ID[i]}"
	[ -n "${M_FILE[i]}" ] && [ -n "${M_TEST[i]}" ] && [ "${M_N[i]}" -gt 0 ] ||
		bad "needs file:, test: and at least one find:/replace:"
	for ((k = 0; k < M_N[i]; k++)); do
		[ -n "${M_REPL[$i,$k]+x}" ] || bad "a 'find:' without its 'replace:'"
	done
	for ((j = 0; j < i; j++)); do [ "${M_ID[j]}" != "${M_ID[i]}" ] || bad "duplicate id"; done
done

# --- which mutants
sel=()
if [ $# -eq 0 ]; then
	for ((i = 0; i <= n; i++)); do sel+=("$i"); done
else
	for want in "$@"; do
		found=
		for ((i = 0; i <= n; i++)); do [ "${M_ID[i]}" = "$want" ] && found=$i; done
		[ -n "$found" ] || { echo "mutants: no mutant '$want' in $FILE" >&2; exit 2; }
		sel+=("$found")
	done
fi

# --- the scratch copy: the tree as it is (uncommitted changes included), without .git and the
# other build trees; build/ comes along (but not build/linux) so that builds are incremental.
SCRATCH=$(mktemp -d /tmp/minivmm-mutants.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
trap 'exit 130' INT TERM
for e in "$ROOT"/* "$ROOT"/.[!.]*; do
	[ -e "$e" ] || continue
	case ${e##*/} in .git | build | build-san | build-fuzz) continue ;; esac
	cp -a "$e" "$SCRATCH/"
done
if [ -d "$ROOT/build" ]; then
	mkdir "$SCRATCH/build"
	for e in "$ROOT"/build/*; do
		[ -e "$e" ] && [ "${e##*/}" != linux ] && cp -a "$e" "$SCRATCH/build/"
	done
fi
LOG=$SCRATCH/.mutants-log

build() { make -C "$SCRATCH" -j"$JOBS" all build/unit-tests >"$LOG" 2>&1; }
# run_test CMD: the test's exit status (124 or 137: it ran out of time)
run_test() {
	(cd "$SCRATCH" && timeout --kill-after=10 "$LIMIT" bash -c "$1") >"$LOG" 2>&1
}

echo "mutants: building the unmutated copy in $SCRATCH" >&2
build || { tail -n 30 "$LOG" >&2; echo "mutants: the unmutated tree does not build" >&2; exit 1; }

declare -A BASE
for i in "${sel[@]}"; do
	t=${M_TEST[i]}
	[ -z "${BASE[$t]+x}" ] || continue
	echo "mutants: baseline: $t" >&2
	rc=0
	run_test "$t" || rc=$?
	BASE[$t]=$rc
	if [ $rc != 0 ]; then
		echo "mutants: '$t' fails (status $rc) without any mutant:" >&2
		tail -n 20 "$LOG" | sed 's/^/    /' >&2
	fi
done

results=()
failed=0
for i in "${sel[@]}"; do
	id=${M_ID[i]} f=${M_FILE[i]} t=${M_TEST[i]}
	echo "mutants: $id" >&2
	if [ "${BASE[$t]}" != 0 ]; then
		results+=("BASELINE FAILED")
		failed=$((failed + 1))
		continue
	fi
	target=$SCRATCH/$f
	res=
	if [ ! -f "$target" ]; then
		res="NOT APPLIED"
		echo "    no file $f" >&2
	else
		orig=$(cat "$target"; printf x) # keeps trailing newlines
		orig=${orig%x}
		text=$orig
		for ((k = 0; k < M_N[i]; k++)); do
			find=${M_FIND[$i,$k]} rest=${text#*"${M_FIND[$i,$k]}"}
			if [ "$rest" = "$text" ] || [[ $rest == *"$find"* ]]; then
				res="NOT APPLIED"
				printf '    the text to replace does not occur exactly once in %s: %s\n' \
					"$f" "$find" >&2
				break
			fi
			text=${text/"$find"/"${M_REPL[$i,$k]}"}
		done
	fi
	if [ -z "$res" ]; then
		printf '%s' "$text" >"$target"
		if ! build; then
			res="BUILD FAILED"
			tail -n 15 "$LOG" | sed 's/^/    /' >&2
		else
			rc=0
			run_test "$t" || rc=$?
			case $rc in
			0) res=SURVIVED ;;
			77) res=SKIPPED ;;
			124 | 137) res="KILLED (timed out)" ;;
			*) res=KILLED ;;
			esac
			# how the test told (its last lines), on stderr with the progress
			[ "$res" = SURVIVED ] || tail -n 3 "$LOG" | sed 's/^/    /' >&2
		fi
		# back to the original (a fresh mtime, so that the next build recompiles it)
		printf '%s' "$orig" >"$target"
	fi
	results+=("$res")
	case $res in KILLED*) ;; *) failed=$((failed + 1)) ;; esac
done

wid=2 wf=4 wt=4
for i in "${sel[@]}"; do
	[ ${#M_ID[i]} -le $wid ] || wid=${#M_ID[i]}
	[ ${#M_FILE[i]} -le $wf ] || wf=${#M_FILE[i]}
	[ ${#M_TEST[i]} -le $wt ] || wt=${#M_TEST[i]}
done
printf "%-${wid}s | %-${wf}s | %-${wt}s | %s\n" id file test result
j=0
for i in "${sel[@]}"; do
	printf "%-${wid}s | %-${wf}s | %-${wt}s | %s\n" "${M_ID[i]}" "${M_FILE[i]}" "${M_TEST[i]}" \
		"${results[j]}"
	j=$((j + 1))
done
echo "mutants: $((${#sel[@]} - failed)) of ${#sel[@]} killed"
[ $failed -eq 0 ]
