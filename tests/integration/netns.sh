# Network namespaces and taps for integration tests; source after lib.sh:
#
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/netns.sh"
#   netns_require                                  # skip (77) without root, ip or /dev/net/tun
#   NS=mvmm-$$-net; netns_create "$NS"             # a namespace with lo up
#   netns_tap "$NS" tap0 10.0.2.1/24               # a tap in it, up, with the host-side address
#   netns_exec "$NS" "$MINIVMM" --net tap=tap0 ... # run anything inside it
#
# Everything is removed at exit (lib.sh's on_exit), also when the test fails: the processes
# still running inside the namespace (all started by the test), its taps and the namespace.
# Names must be unique per test run: include $$. Interface names are at most 15 characters.
# Traffic stays inside the namespace (see /work/shared/PLATFORM.md, Networking).

# netns_require: skip the test unless namespaces and taps can be made here.
netns_require() {
	[ "$(id -u)" = 0 ] || skip "network namespaces need root"
	command -v ip >/dev/null || skip "ip (iproute2) is not installed"
	[ -c /dev/net/tun ] || skip "/dev/net/tun is missing"
}

# _netns_destroy NAME: kill what runs in the namespace, delete its links, then the namespace.
_netns_destroy() {
	local ns=$1 p dev
	ip netns list 2>/dev/null | grep -qw -- "$ns" || return 0
	for p in $(ip netns pids "$ns" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true # a background job of the test: reap it
	done
	for dev in $(ip -n "$ns" -o link show 2>/dev/null | sed -n 's/^[0-9]*: \([^:@]*\).*/\1/p'); do
		[ "$dev" = lo ] || ip -n "$ns" link del "$dev" 2>/dev/null || true
	done
	ip netns del "$ns" 2>/dev/null || true
}

# netns_create NAME: a new network namespace with its loopback up, removed at exit.
netns_create() {
	local ns=${1:?netns_create needs a name}
	ip netns add "$ns" || fail "cannot create network namespace $ns"
	on_exit "_netns_destroy '$ns'"
	ip -n "$ns" link set lo up || fail "cannot bring up lo in $ns"
}

# netns_tap NAME TAP IP/PREFIX: a persistent tap TAP in namespace NAME, up, with the host-side
# address IP/PREFIX (empty: no address). A VMM run in the namespace opens it by name.
netns_tap() {
	local ns=${1:?netns_tap needs a namespace} tap=${2:?netns_tap needs a tap name} addr=${3:-}
	[ ${#tap} -le 15 ] || fail "tap name too long (15 characters at most): $tap"
	ip -n "$ns" tuntap add dev "$tap" mode tap || fail "cannot create tap $tap in $ns"
	if [ -n "$addr" ]; then
		ip -n "$ns" addr add "$addr" dev "$tap" || fail "cannot add $addr to $tap in $ns"
	fi
	ip -n "$ns" link set "$tap" up || fail "cannot bring up $tap in $ns"
}

# netns_exec NAME CMD...: run CMD inside namespace NAME (in the foreground; put it in the
# background with & as usual: whatever still runs there at exit is killed).
netns_exec() {
	local ns=${1:?netns_exec needs a namespace}
	shift
	ip netns exec "$ns" "$@"
}
