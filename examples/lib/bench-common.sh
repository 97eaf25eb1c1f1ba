# Helpers shared by the examples/bench-*.sh benchmarks; sourced, not run.

# cmd_of NAME: the command line of configuration NAME (the array CMD_<NAME with - as _>),
# quoted for a shell where needed, for printing the exact commands a benchmark ran.
cmd_of() {
	local v="CMD_${1//-/_}[@]" a out=
	for a in "${!v}"; do
		if [[ -z "$a" || "$a" =~ [^A-Za-z0-9_./=,:+-] ]]; then
			a="'${a//\'/\'\\\'\'}'"
		fi
		out+="${out:+ }$a"
	done
	printf '%s' "$out"
}
