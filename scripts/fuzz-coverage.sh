#!/bin/sh
# Source coverage of the fuzz targets over their corpora (`make fuzz-coverage`).
#   fuzz-coverage.sh run NAME "LIBFUZZER FLAGS" FILE...
#       runs build-fuzz-cov/fuzz_NAME (built with -fprofile-instr-generate -fcoverage-mapping)
#       once over tests/fuzz/corpus/NAME (and build-fuzz/corpus/NAME with FUZZ_COV_LEARNED=1),
#       then reports line, function and region coverage of FILE... (the code the target is meant
#       to reach): build-fuzz-cov/NAME.txt per file and per function, NAME.row the table row.
#   fuzz-coverage.sh table NAME...
#       prints the rows as one table.
set -e
DIR=${FUZZ_COV_BUILD:-build-fuzz-cov}
LLVM_PROFDATA=${LLVM_PROFDATA:-llvm-profdata}
LLVM_COV=${LLVM_COV:-llvm-cov}

case "$1" in
run)
	name=$2 flags=$3
	shift 3
	bin=$DIR/fuzz_$name
	corpora=tests/fuzz/corpus/$name
	if [ "${FUZZ_COV_LEARNED:-0}" = 1 ] && [ -d "build-fuzz/corpus/$name" ]; then
		corpora="$corpora build-fuzz/corpus/$name"
	fi
	rm -f "$DIR/$name.profraw" "$DIR/$name.profdata"
	# -runs=0: execute every corpus input once, mutate nothing. $flags stays unquoted: it is a
	# list of options (the same the fuzzing run gets, e.g. -max_len).
	# shellcheck disable=SC2086
	if ! LLVM_PROFILE_FILE="$DIR/$name.profraw" "./$bin" -runs=0 $flags $corpora \
		>"$DIR/$name.log" 2>&1; then
		echo "fuzz-coverage: $name failed on its corpus (see $DIR/$name.log)" >&2
		tail -n 20 "$DIR/$name.log" >&2
		exit 1
	fi
	inputs=$(sed -n 's/.*INFO: seed corpus: files: \([0-9]*\).*/\1/p; s/^#\([0-9]*\).*INITED.*/\1/p' \
		"$DIR/$name.log" | tail -n 1)
	"$LLVM_PROFDATA" merge -sparse -o "$DIR/$name.profdata" "$DIR/$name.profraw"
	{
		"$LLVM_COV" report "$bin" -instr-profile="$DIR/$name.profdata" "$@"
		echo
		"$LLVM_COV" report "$bin" -instr-profile="$DIR/$name.profdata" -show-functions "$@"
	} >"$DIR/$name.txt"
	"$LLVM_COV" export "$bin" -instr-profile="$DIR/$name.profdata" "$@" |
		python3 -c '
import json, os, sys
name, inputs, files = sys.argv[1], sys.argv[2], sys.argv[3:]
data = json.load(sys.stdin)["data"][0]
want = {os.path.realpath(f) for f in files}
t = {"lines": [0, 0], "functions": [0, 0], "regions": [0, 0]}
for f in data["files"]:
    if os.path.realpath(f["filename"]) in want:
        for k in t:
            t[k][0] += f["summary"][k]["covered"]
            t[k][1] += f["summary"][k]["count"]
unreached = sorted({fn["name"].split(":")[-1] for fn in data["functions"]
                    if fn["count"] == 0 and os.path.realpath(fn["filenames"][0]) in want})
pct = lambda k: "%.1f%% (%d/%d)" % (100.0 * t[k][0] / max(t[k][1], 1), t[k][0], t[k][1])
print("| %s | %s | %s | %s | %s | %s | %s |" % (name, inputs or "?", " ".join(files), pct("lines"),
      pct("functions"), pct("regions"), ", ".join(unreached) or "-"))
' "$name" "$inputs" "$@" >"$DIR/$name.row"
	cat "$DIR/$name.row"
	;;
table)
	shift
	echo "| target | runs | intended files | lines | functions | regions | functions never reached |"
	echo "|---|---|---|---|---|---|---|"
	for name in "$@"; do
		cat "$DIR/$name.row"
	done
	echo "(per file and per function: $DIR/NAME.txt)"
	;;
*)
	echo "usage: $0 run NAME FLAGS FILE... | table NAME..." >&2
	exit 2
	;;
esac
