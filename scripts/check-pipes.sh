#!/usr/bin/env bash
# Pipe check (`make check-pipes`, part of `make test`): in a script that sets pipefail, a
# pipeline whose last command stops reading before its input ends (head, grep -q, grep -m,
# awk's exit, sed's q) kills the writer with SIGPIPE whenever the writer still has output to
# write, and pipefail turns that into exit status 141: a failure that comes and goes with the
# writer's timing (build-images.sh's `ldconfig -p | awk '... exit'` ended the nested suite
# before it started, one run in two). Such a line is printed as file:line and the script
# exits 1, unless the line itself takes the status (`|| true`) or says why the writer cannot
# be cut short with a `# pipe-ok: WHY` comment.
#
# Usage: scripts/check-pipes.sh [ROOT]   (default: the repository this script is in)
set -u
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT" || exit 2

# A pipe into a reader that may quit early: | head, | grep ... -q/-m, | awk '...exit...',
# | sed '...q...' (the quit command ends the expression or is followed by } or ;).
EARLY='\|[[:space:]]*(head\b|grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|awk[[:space:]][^|]*\bexit\b|sed[[:space:]][^|]*[;{[:space:]]q[[:space:]]*[;}'"'"'])'
bad=0
files=$(git ls-files '*.sh' 2>/dev/null || find . -name '*.sh' -not -path './build*')
# The scripts that set pipefail, and the files they source (which run under it too).
strict=$(grep -l 'pipefail' $files)
sourced=$(grep -h '^[[:space:]]*\(source\|\.\)[[:space:]]' $strict | grep -o '[A-Za-z0-9_.-]*\.sh' | sort -u)
for f in $files; do
	case " $(echo $strict) " in
	*" $f "*) ;;
	*) case " $(echo $sourced) " in *" ${f##*/} "*) ;; *) continue ;; esac ;;
	esac
	while IFS= read -r hit; do
		line=${hit#*:}
		case $line in
		*'|| true'* | *'# pipe-ok:'*) continue ;;
		esac
		case ${line#"${line%%[![:space:]]*}"} in
		'#'*) continue ;;
		esac
		echo "$f:${hit%%:*}: a pipe into a reader that may stop early under pipefail: ${line#"${line%%[![:space:]]*}"}"
		bad=1
	done < <(grep -nE "$EARLY" "$f")
done
[ $bad = 0 ] || echo "check-pipes: read the input to its end (grep >/dev/null, sed -n '/x/{p;q}' FILE), add '|| true', or say '# pipe-ok: WHY'" >&2
exit $bad
