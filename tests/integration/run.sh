#!/usr/bin/env bash
# Run every integration test (or those named as arguments) and summarise.
set -u
dir=$(cd "$(dirname "$0")" && pwd)
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=("$dir"/test_*.sh)
pass=0 failed=0 skipped=0 failures=()
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	start=$(date +%s%N)
	out=$(bash "$t" 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	secs=$((ms / 1000)).$((ms % 1000 / 100))
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS  %-40s %6ss\n' "$name" "$secs" ;;
	77) skipped=$((skipped + 1)); printf 'SKIP  %-40s %s\n' "$name" "$(grep -m1 '^SKIP' <<<"$out")" ;;
	*) failed=$((failed + 1)); failures+=("$name"); printf 'FAIL  %-40s %6ss\n' "$name" "$secs"
	   sed 's/^/    /' <<<"$out" ;;
	esac
done
echo "integration: $pass passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
