#!/usr/bin/env bash
# Layer check (`make check-layers`, part of `make test`): each top-level source folder is a
# layer, and a file may include its own layer and the ones below, never one above:
#
#   vmm/      the VMM: KVM, command line, control socket, snapshots, sandbox, device kinds
#   arch/     the machine the guest sees (x86: boot protocols, tables, legacy devices)
#   devices/  device models and their host back ends
#   base/     the ground floor: event loop, guest memory, logging, the I/O bus
#
# Every #include "..." in a .c or .h file under those folders is resolved as the compiler does
# (next to the including file first, then from the repository root: -I.); one that names a
# file of a higher layer is printed as file:line and makes the script exit 1. Quoted includes
# that resolve to neither (none today) are not the layers' business.
#
# Usage: scripts/check-layers.sh [ROOT]   (default: the repository this script is in)
set -u
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT" || exit 2

# The layer of a path relative to the root, as a rank: a file may include ranks <= its own.
# Prints nothing for a path outside the four layers.
rank() {
	case $1 in
	base/*) echo 0 ;;
	devices/*) echo 1 ;;
	arch/*) echo 2 ;;
	vmm/*) echo 3 ;;
	esac
}
NAMES=(base/ devices/ arch/ vmm/)
ALLOWED=("base/" "devices/ and base/" "arch/, devices/ and base/" "every layer")

bad=0
files=0
includes=0
while IFS= read -r -d '' file; do
	files=$((files + 1))
	from=$(rank "$file")
	dir=$(dirname "$file")
	# "lineno:#include "name"" for every quoted include (leading blanks and "# include" too).
	while IFS= read -r hit; do
		lineno=${hit%%:*}
		name=${hit#*:}
		name=${name#*\"}
		name=${name%%\"*}
		if [ -e "$dir/$name" ]; then
			target=$(realpath -m --relative-to=. "$dir/$name")
		elif [ -e "$name" ]; then
			target=$(realpath -m --relative-to=. "$name")
		else
			continue
		fi
		includes=$((includes + 1))
		to=$(rank "$target")
		[ -n "$to" ] || continue
		if [ "$to" -gt "$from" ]; then
			[ "$target" = "$name" ] && what=${NAMES[$to]} || what="$target, ${NAMES[$to]}"
			echo "$file:$lineno: ${NAMES[$from]} includes \"$name\" ($what);" \
				"${NAMES[$from]} may include ${ALLOWED[$from]}" >&2
			bad=$((bad + 1))
		fi
	done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file")
done < <(find vmm arch devices base -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)

if [ "$bad" -gt 0 ]; then
	echo "check-layers: $bad include(s) point the wrong way" \
		"(vmm/ -> arch/ -> devices/ -> base/)" >&2
	exit 1
fi
echo "check-layers: $includes includes in $files files, every arrow points down" \
	"(vmm/ -> arch/ -> devices/ -> base/)"
