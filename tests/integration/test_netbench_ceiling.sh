#!/usr/bin/env bash
# examples/netbench.sh's ceiling rows, no VM needed: host to guest against tapread: (a process
# reading the tap one frame per read(), answering ARP for the guest, counting its datagrams,
# fragments reassembled above the MTU), request/response against netns: (UDP and TCP), which
# --ceiling adds once, guest to host's write-path variants (tapwrite:napi, tapwrite:uring), the
# read-path ones (tapread:uring; tapread:uring-epoll, as minivmm's removed rx-uring=on
# received; tapread:backend, minivmm's own tap backend linked in; tapread:device, its
# virtio-net device too, with a fake driver), and
# the refusals of what a ceiling cannot measure. Where /dev/kvm works, --ceiling beside minivmm
# for h2g and rr too. Nothing the script made may outlive it.
source "$(dirname "$0")/lib.sh"
kvm_usable || runs_no_vmm
source "$(dirname "$0")/netns.sh"
netns_require
command -v cc >/dev/null || skip "no C compiler"

BENCH=$ROOT/examples/netbench.sh
export NETBENCH_NS=nbceil-$$
# netbench removes its namespaces itself, also on failure; this is for a netbench killed hard.
on_exit "_netns_destroy '$NETBENCH_NS-g0'; _netns_destroy '$NETBENCH_NS'"

# row JSON CONFIG SIZE KEY: KEY of CONFIG's row for SIZE in netbench's --json output
row() {
	grep -o "{\"config\":\"$2\",\"message_bytes\":$3,[^}]*}" <<<"$1" |
		sed -n "s/.*\"$4\":\([^,}]*\).*/\1/p"
}
# positive JSON CONFIG SIZE KEY...: fail unless each value is a number above zero
positive() {
	local out=$1 cfg=$2 size=$3 k v
	shift 3
	for k in "$@"; do
		v=$(row "$out" "$cfg" "$size" "$k")
		awk -v v="$v" 'BEGIN { exit !(v + 0 > 0) }' || fail "$cfg $size bytes: $k is '$v' in: $out"
	done
}
# run NAME ARGS...: netbench with ARGS (a few seconds); its output in $out
run() {
	local name=$1
	shift
	out=$(timeout 120 "$BENCH" --secs 1 --rounds 1 --json "$@" 2>"$TEST_TMP/$name.err") ||
		{ cat "$TEST_TMP/$name.err"; fail "netbench $*: failed: $out"; }
}

# Host to guest: --ceiling adds tapread: to the netns: stand-in. 3000 bytes: three fragments,
# each datagram counted once, its payload only.
run h2g --dir h2g --config netns: --ceiling --sizes "64 3000"
grep -q '"configs":\["netns:","tapread:"\]' <<<"$out" || fail "h2g --ceiling: configs: $out"
for size in 64 3000; do
	positive "$out" netns: $size recv_msgs pps mbps
	positive "$out" tapread: $size recv_msgs pps mbps elapsed_s vmm_cpu_us_per_pkt
	# Counted for the 1 s asked for from the first datagram, like the probe's sink.
	e=$(row "$out" tapread: $size elapsed_s)
	awk -v e="$e" 'BEGIN { exit !(e >= 0.999 && e < 2) }' || fail "tapread: $size bytes: elapsed '$e' s"
	# The rate is payload bytes over that interval (the UDP header would add 12% at 64 bytes).
	m=$(row "$out" tapread: $size recv_msgs) r=$(row "$out" tapread: $size mbps)
	awk -v e="$e" -v m="$m" -v r="$r" -v s=$size 'BEGIN { x = m * s * 8 / e / 1e6
		exit !(r > 0 && x / r > 0.99 && x / r < 1.01) }' ||
		fail "tapread: $size bytes: $m messages in $e s is not $r Mbit/s"
done

# The batched read path's stand-in (reads kept in flight through io_uring), fragments too: it
# says how it read, and a row whose stand-in read otherwise fails.
run h2guring --dir h2g --config tapread:uring --sizes "64 3000"
for size in 64 3000; do
	positive "$out" tapread:uring $size recv_msgs pps mbps vmm_cpu_us_per_pkt
done
# ... and the reads as minivmm's removed rx-uring=on received them (a SINGLE_ISSUER ring's eventfd
# waited on by epoll, each frame copied into a bounce buffer): each
# datagram counted once, its payload only, for the 1 s asked for.
run h2guringepoll --dir h2g --config tapread:uring-epoll --sizes "64 3000"
grep -q '"configs":\["tapread:uring-epoll"\]' <<<"$out" || fail "h2g uring-epoll: configs: $out"
for size in 64 3000; do
	positive "$out" tapread:uring-epoll $size recv_msgs pps mbps elapsed_s vmm_cpu_us_per_pkt
	e=$(row "$out" tapread:uring-epoll $size elapsed_s)
	m=$(row "$out" tapread:uring-epoll $size recv_msgs) r=$(row "$out" tapread:uring-epoll $size mbps)
	awk -v e="$e" -v m="$m" -v r="$r" -v s=$size 'BEGIN { x = m * s * 8 / e / 1e6
		exit !(e >= 0.999 && e < 2 && r > 0 && x / r > 0.99 && x / r < 1.01) }' ||
		fail "tapread:uring-epoll: $size bytes: $m messages in $e s at $r Mbit/s"
done

# minivmm's own tap backend linked into tapread: the row says its stand-in received that way
# (the backend's rx_path checked at open), datagrams counted once for the 1 s asked for,
# fragments too; and minivmm's virtio-net device on it, a fake driver taking the frames out of
# guest memory.
run h2gdevice --dir h2g --compare tapread:backend tapread:device --sizes "64 3000"
out_backend=$out
# ... with further --net options (the I/O thread's adaptive polling), named in the row's mode.
run h2gdevicepoll --dir h2g --config tapread:device,poll-us=50 --sizes "64 3000"
out="$out_backend $out"
for cfg in tapread:backend tapread:device tapread:device,poll-us=50; do
	for size in 64 3000; do
		positive "$out" $cfg $size recv_msgs pps mbps elapsed_s vmm_cpu_us_per_pkt
		e=$(row "$out" $cfg $size elapsed_s)
		m=$(row "$out" $cfg $size recv_msgs) r=$(row "$out" $cfg $size mbps)
		awk -v e="$e" -v m="$m" -v r="$r" -v s=$size 'BEGIN { x = m * s * 8 / e / 1e6
			exit !(e >= 0.999 && e < 2 && r > 0 && x / r > 0.99 && x / r < 1.01) }' ||
			fail "$cfg: $size bytes: $m messages in $e s at $r Mbit/s"
	done
done

# Request/response, UDP: netns: is its own ceiling, a row once however it is asked for.
run rr --dir rr --config netns: --ceiling --sizes "64 4000"
grep -q '"configs":\["netns:"\]' <<<"$out" || fail "rr --ceiling: configs: $out"
for size in 64 4000; do
	positive "$out" netns: $size tps lat_us_p50 transactions
done
# ... and TCP.
run rrtcp --proto tcp --dir rr --config netns --ceiling --sizes 64
grep -q '"proto":"tcp",.*"configs":\["netns"\]' <<<"$out" || fail "tcp rr --ceiling: configs: $out"
positive "$out" netns 64 tps lat_us_p50 transactions

# Guest to host, the write-path candidates against the plain ceiling: IFF_NAPI, and io_uring
# (64 frames a system call; 3000 bytes: three fragments each, written one by one). tapsend says
# how it wrote, and a row whose stand-in did not write the way asked fails.
run tapwrite --dir g2h --compare tapwrite:napi tapwrite:uring --sizes "64 3000"
grep -q '"configs":\["tapwrite:napi","tapwrite:uring"\]' <<<"$out" || fail "g2h write paths: configs: $out"
for cfg in tapwrite:napi tapwrite:uring; do
	for size in 64 3000; do positive "$out" $cfg $size recv_msgs pps mbps vmm_cpu_us_per_pkt; done
done
# ... and io_uring as minivmm's tx-uring=on submits (a linked chain on the tap).
run tapwritelinked --dir g2h --config tapwrite:uring-linked --sizes "64 3000"
for size in 64 3000; do
	positive "$out" tapwrite:uring-linked $size recv_msgs pps mbps vmm_cpu_us_per_pkt
done

# Beside a VM, --ceiling adds tapread: for h2g and netns: for rr; and minivmm's tx-uring=on.
if kvm_usable; then
	run h2gvm --dir h2g --config minivmm: --ceiling --sizes 64 --probe-args net.rxwait=halt
	grep -q '"configs":\["minivmm:","tapread:"\]' <<<"$out" || fail "h2g --ceiling: configs: $out"
	positive "$out" minivmm: 64 recv_msgs pps
	positive "$out" tapread: 64 recv_msgs pps
	run rrvm --dir rr --config minivmm: --ceiling --sizes 64
	grep -q '"configs":\["minivmm:","netns:"\]' <<<"$out" || fail "rr --ceiling: configs: $out"
	positive "$out" minivmm: 64 tps
	positive "$out" netns: 64 tps
	# minivmm's own batched transmit beside the stand-in that submits as it does (a row whose
	# minivmm fell back to writev fails).
	run g2huring --dir g2h --compare minivmm:tx-uring=on tapwrite:uring-linked --sizes 64
	positive "$out" minivmm:tx-uring=on 64 recv_msgs pps
fi

# What a ceiling cannot measure is refused (--timeout 2: a wrongly accepted run ends soon).
refused() {
	local want=$1 rc=0
	shift
	"$BENCH" --secs 1 --timeout 2 "$@" >/dev/null 2>"$TEST_TMP/refused.err" || rc=$?
	[ $rc = 2 ] && grep -q -- "$want" "$TEST_TMP/refused.err" ||
		fail "$*: status $rc, $(cat "$TEST_TMP/refused.err")"
}
refused 'tapread: measures h2g only' --dir g2h --config tapread: --sizes 64
refused 'tapwrite:\[napi|uring|uring-linked\] or tapread:\[uring|uring-epoll|backend|device\[,OPTS\]\]' --dir g2h --config tapwrite:fast --sizes 64
refused 'tapread: measures h2g only' --dir g2h --config tapread:uring-epoll --sizes 64
refused 'tapread: measures h2g only' --dir rr --config tapread:
refused 'tapread: measures UDP only' --dir h2g --proto tcp --config tapread:
refused 'no ceiling row for g2g' --dir g2g --config netns: --ceiling --sizes 64
refused '--dir rr or crr only' --dir h2g --proto tcp --config netns: --ceiling

ip netns list | grep -qw -- "$NETBENCH_NS" && fail "netbench left its namespace behind"
for p in $(pgrep -f "build/examples/(tapread|udpperf|tcpperf)"); do
	[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$ROOT" ] && fail "netbench left host tools running"
done
exit 0
