#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2054 # R_* are read through ${!name}; -M takes commas
# netbench.sh: UDP (or TCP) benchmarks of a guest's virtio-net device, netperf UDP_STREAM style.
#
# usage: examples/netbench.sh [--dir g2h|h2g|rr|crr|pps|g2g] [--config CFG | --compare CFG_A CFG_B]
#            [--proto udp|tcp] [--mib N] [--offload on|off]
#            [--sizes "32 64 ..."] [--secs N] [--buf BYTES] [--vcpu-pin CPULIST]
#            [--io-pin CPULIST] [--host-pin CPULIST] [--timeout SEC] [--json] [--keep-logs]
#            [--probe-args "WORDS"]   (extra words for the probe, e.g. net.txwait=halt)
#            [--rounds N] [--ceiling] [--profile] [--plot FILE.svg] [--breakdown [--perf]]
#
# Directions (--dir, default g2h):
#   g2h  guest udp_stream -> host sink: throughput as received by the host
#   h2g  host send -> guest udp_sink: what the guest received
#   rr   guest udp_rr <-> host echo: transactions/s and latency percentiles
#   pps  guest pktgen -> host sink: packets/s (the probe sends minimum frames: 18-byte datagrams)
#   g2g  two guests on a bridge: guest A udp_stream -> guest B udp_sink
#
# --proto tcp (g2h, h2g, g2g, rr, crr): the probe's own TCP against Linux's (build/examples/tcpperf):
#   g2h  guest tcp_stream -> host `tcpperf recv`, which checks every byte: throughput as received
#   h2g  host `tcpperf send` -> guest tcp_sink, which checks every byte: throughput as received
#   g2g  guest A tcp_stream -> guest B tcp_sink over the bridge (B checks every byte):
#        throughput as B received it (netns: two tcpperf namespaces on the same bridge)
#   rr   guest tcp_rr <-> host `tcpperf rr-server`: transactions/s and latency percentiles
#   crr  (TCP only) netperf's TCP_CRR: guest tcp_crr <-> host `tcpperf crr-server`, a new
#        connection per transaction (connect, one request/response of --sizes bytes, close, the
#        guest first): transactions/s and latency percentiles from connect to the whole echo,
#        as rr's. The row fails unless both ends count the same transactions and every
#        connection closed cleanly (the guest's through TIME_WAIT, the server's without a
#        reset). --ceiling adds netns: (tcpperf crr, the host kernel's own path), as for rr.
#   A stream row moves --mib MiB on one connection (default: by write size, so that a row lasts
#   seconds, not tenths, on a 2-core host: 64 MiB for writes under 1 KiB, 256 MiB under 16 KiB,
#   1024 MiB from 16 KiB; a quarter of that for g2g, whose rates are a quarter); --sizes is the application's
#   write size (netperf's -m, 1 to 65536 bytes; default "64 1448 65536"): the probe's
#   net.write=N (N bytes per tcp_send call) and `tcpperf send --write N` (N bytes per send()),
#   one row per size, shown as its Message Size ("message_bytes" and "write_bytes" in --json,
#   with the connection's "mss"). Neither sender delays small writes: the probe's TCP has no
#   Nagle algorithm and tcpperf sets TCP_NODELAY, so a 64-byte write goes out as a 64-byte
#   segment while the windows allow, and only what waits for the window goes out together
#   (Linux's netperf TCP_STREAM -m 64 leaves Nagle on, which coalesces the writes into full
#   segments: its 64 B figure measures the copy, ours the per-packet path). --json has the
#   sender's data segments ("segs": the probe counts a TSO segment once, Linux the segments it
#   is cut into; "small_segs": the probe's shorter than the MSS). The socket size, packets/s,
#   loss and VMM CPU columns are "-" for TCP. A row fails if a byte arrives wrong.
#
# --offload on|off: the same transmit/receive offloads for every VM configuration, so a
# comparison stays like with like: the probe's net.offload=on|off (CSUM + HOST_TSO4: TSO
# segments of up to 64 KiB, or MSS frames with every checksum its own), minivmm's --net
# offload=on|off, and for qemu: csum, guest_csum, host_tso4, guest_tso4 (off: also the TSO6,
# ECN and UFO bits) on its virtio-net device. Unset: each VMM's default. netns: and tapwrite:
# are not VMs and take no part. The guest's negotiated offloads ("csum,tso4", "csum" or "off")
# and, for a TCP g2h row, the TSO frames it sent are in --json ("offload", "tso_frames").
#
# Configurations (CFG, default minivmm:):
#   minivmm[:OPTS]  build/minivmm, --net tap=TAP,transport=mmio,mac=..,OPTS  (OPTS: tx=bh,...)
#   minivmm@PATH[:OPTS]  the same with the minivmm binary at PATH (absolute, or relative to
#                   the repository): two builds side by side
#   qemu[:OPTS]     qemu-system-x86_64 -M microvm, -device virtio-net-device,...,OPTS (tx=timer)
#   netns:          no VM: the "guest" is a network namespace behind a veth pair running
#                   build/examples/udpperf; tests this script's plumbing, and gives the
#                   Linux kernel's own figure for the same path
#   tapwrite:       no VM (g2h and pps only): build/examples/tapsend writes the probe's frames
#                   straight into the tap, one write() each, as a VMM's I/O thread does: the
#                   ceiling of any tap-backed VMM on this host, and (VMM CPU column) what the
#                   host kernel's tap -> UDP path alone costs per packet
#   tapwrite:napi   the same with the tap attached IFF_NAPI (each write() goes through the
#                   queue's NAPI poll and GRO): whether a VMM should take that flag up
#   tapwrite:uring  the same writes through io_uring, 64 frames per system call (a datagram
#                   cut into fragments: one at a time): what batching the writes would be worth
#   tapwrite:uring-linked  the same, submitted as minivmm's tx-uring=on does: one linked chain
#                   of WRITEVs on the tap (SINGLE_ISSUER, DEFER_TASKRUN ring)
#   tapread:        no VM (h2g only): build/examples/tapread reads the tap, one read() per
#                   frame, as a VMM's I/O thread does, answers ARP for the guest and counts the
#                   datagrams to it as the probe's sink does: the ceiling of any tap-backed VMM
#                   receiving on this host, and (VMM CPU column) what the host's UDP -> tap
#                   path and the read alone cost per packet
#   tapread:uring   the same reads through io_uring, 64 per system call (into 64 buffers; a
#                   read of an empty tap waits, io_uring polls it): what batching the
#                   reads would be worth
#   tapread:uring-epoll  the same 64 reads, received as minivmm's rx-uring=on did (removed): in a
#                   SINGLE_ISSUER ring whose eventfd an epoll
#                   loop waits on, each frame copied into one bounce buffer
#   tapread:backend  minivmm's own tap backend (devices/backends/tap.c) linked into tapread,
#                   taking frames as the device does (64 per wake at most): the VMM's receive
#                   code minus the guest
#   tapread:device  minivmm's virtio-net device on that backend, driven
#                   by a fake driver (256 buffers of 2 KiB, frames taken out of guest memory,
#                   kick and interrupt eventfds): the VMM's whole receive path minus the guest;
#                   tapread:device,OPTS adds --net options (tapread:device,poll-us=50)
# --compare A B runs both, alternating which goes first (A, B on one size or round, then B, A on
# the next, as examples/bench-blk.sh does), and adds a column with
# B's speedup over A in percent (throughput; packets/s for pps; transactions/s for rr).
# --ceiling adds the direction's ceiling as a further row per size, in the same alternation:
# tapwrite: for g2h and pps, tapread: for h2g, netns: for rr (UDP and TCP: no tap-level
# stand-in answers requests; the kernel's own path is the figure to beat); none for g2g.
# --profile (needs perf) samples the VMM (g2g: the receiving one; or the stand-in) with perf
# while the guest runs and prints, after the table, where its CPU time went in the row's run: per thread, the
# share in the host kernel, the VMM's own code and libraries, and the top kernel symbols.
# --breakdown (UDP g2h, h2g, rr, pps) says where each row's time goes, per packet (per
# transaction for rr), printed after the table ("breakdown" in --json; the method and its
# error are in docs/performance.md): the host tool (udpperf) samples every thread of the VMM
# (minivmm, QEMU, or the stand-in: netns:'s udpperf, tapwrite:'s tapsend, tapread:'s tapread)
# and its own from /proc at the first datagram and every 50 ms after, with the packets moved
# so far; between the first and the last sample: per thread, busy % of the window, us of CPU
# per packet, context switches (voluntary: it slept and was woken; involuntary: preempted)
# per packet. For minivmm, with its control socket (--api-sock), also what only the VMM
# counts, per packet: KVM_RUN exits by reason, the net device's kicks (ioeventfd counts),
# I/O-thread wake-ups (ioeventfd reads) and interrupts (irqfd writes), and with adaptive polling
# (poll-us=) the polls that found work, the time polled and the transmit frames found without a
# kick; "n/a" for the others.
# --perf (with --breakdown) adds cycles, instructions and cache misses per packet of the VMM
# process (perf stat -p, for --secs from the VMM's first vCPU thread); skipped, with a note,
# where perf cannot count (no perf, or `perf stat -e instructions true` counts nothing).
# --rounds N measures every size N times (A, B, then B, A ...): each configuration's row is
# its median round, and the speedup is the median of the N per-round speedups, followed by
# their lowest and highest ("speedup_pct_rounds" in --json: all of them). Rows on a
# shared machine drift by 10-20% between runs; use 3 or 5 rounds for figures you publish.
#
# --plot FILE.svg (needs gnuplot: apt-get install gnuplot-nox) draws the rows of the table, from the
# same figures as the table and --json: throughput (Mbit/s; packets/s for pps) against message
# size (log scale), one line per configuration, the ceiling rows (tapwrite:, tapread:, netns: when
# --ceiling adds it for rr) dashed; for rr the latency p50 and p99 against size and, beside them,
# transactions/s. FILE is relative to the current directory; gnuplot is checked before anything
# runs (GNUPLOT: the program, default gnuplot).
#
# Everything runs in a network namespace of its own (netbench-PID): the VMM runs inside it
# (ip netns exec), so its tap lives there; the host side is 10.0.2.1/24 on the tap (on a
# bridge for g2g), the guest 10.0.2.15 (second guest 10.0.2.16). Namespaces, taps, bridges
# and processes are removed at exit, on Ctrl-C and on failure. Needs root.
#
# Columns: socket buffer (the host socket's SO_RCVBUF, SO_SNDBUF for h2g, as getsockopt reports
# it), message size, elapsed seconds (first to last datagram received), throughput in 10^6
# bits/s of UDP payload as received, packets/s as received, and the VMM's CPU time (utime +
# stime of the whole VMM process, all threads) per packet over the measured interval, in
# microseconds: per datagram the guest sent (g2h, pps), received (h2g), per transaction (rr);
# for g2g the receiving VMM's CPU per packet it received.
# Pinning, the same roles for both VMMs, by thread id (taskset -p) as soon as each thread exists:
# --vcpu-pin the vCPU threads (minivmm "vcpuN", QEMU "CPU N/KVM" or "CPU N/TCG"), --io-pin the
# I/O thread (minivmm "io"; QEMU's main thread, where its tap and virtio-net run, and any "IO
# <id>" iothread); other threads are left alone (threads started later inherit their creator's
# set). The affinity then observed per role is printed after the table ("affinity" in --json).
# netns: runs its sender on --vcpu-pin, tapwrite: and tapread: on --io-pin. --host-pin pins the
# host tool.
set -euo pipefail

DIR=g2h
SIZES=""
SECS=2
BUF=4194304
VCPU_PIN=""
IO_PIN=""
HOST_PIN=""
TIMEOUT=30
JSON=0
KEEP_LOGS=0
ROUNDS=1
CEILING=0
PROFILE=0
BREAKDOWN=0
PERF=0
PERF_NOTE=""
CONFIGS=()
PROTO=udp
MIB= # empty: by write size (mib_of)
OFFLOAD=""
PLOT=""
GNUPLOT=${GNUPLOT:-gnuplot}

# shellcheck source=examples/lib/bench-common.sh
source "$(dirname "$0")/lib/bench-common.sh"
# shellcheck source=examples/lib/netbench-verdicts.sh
source "$(dirname "$0")/lib/netbench-verdicts.sh"
config_arg() {
	bench_value "$@"
	CONFIGS=("$2")
	BENCH_SHIFT=2
}
compare_arg() {
	[ $# -ge 3 ] || die "--compare needs two configurations"
	CONFIGS=("$2" "$3")
	BENCH_SHIFT=3
}
bench_args --dir=DIR --sizes=SIZES --secs=SECS --probe-args=PROBE_ARGS? --buf=BUF \
	--config@config_arg --compare@compare_arg --vcpu-pin=VCPU_PIN --io-pin=IO_PIN \
	--host-pin=HOST_PIN --timeout=TIMEOUT --rounds=ROUNDS --ceiling+CEILING --profile+PROFILE \
	--breakdown+BREAKDOWN --perf+PERF \
	--json+JSON --keep-logs+KEEP_LOGS --proto=PROTO --mib=MIB --offload=OFFLOAD --plot=PLOT -- "$@"

case "$DIR" in g2h | h2g | rr | crr | pps | g2g) ;; *) die "--dir must be g2h, h2g, rr, crr, pps or g2g" ;; esac
# rr and crr: request/response rows (transactions/s and latency)
RR=0
[[ "$DIR" != rr && "$DIR" != crr ]] || RR=1
case "$PROTO" in
udp) [ "$DIR" != crr ] || die "--dir crr is TCP only: --proto tcp" ;;
tcp)
	[[ "$DIR" == g2h || "$DIR" == h2g || "$DIR" == g2g || "$RR" == 1 ]] ||
		die "--proto tcp measures g2h, h2g, g2g, rr and crr only"
	[[ "$CEILING" = 0 || "$RR" == 1 ]] ||
		die "--ceiling with --proto tcp: --dir rr or crr only (its netns: row); the tap ceilings are UDP only"
	;;
*) die "--proto must be udp or tcp" ;;
esac
[[ -z "$MIB" || "$MIB" =~ ^[1-9][0-9]{0,3}$ ]] || die "--mib must be 1 to 9999"
case "$OFFLOAD" in "" | on | off) ;; *) die "--offload must be on or off" ;; esac
for c in "${CONFIGS[@]}"; do
	[[ -z "$OFFLOAD" || "$c" != *offload=* && "$c" != *csum=* && "$c" != *tso4=* ]] ||
		die "--offload sets the offloads: not also in $c"
done
bench_positive SECS TIMEOUT
[[ "$ROUNDS" =~ ^[1-9][0-9]?$ ]] || die "--rounds must be 1 to 99"
[[ "$BUF" =~ ^[0-9]+$ ]] || die "--buf must be a number of bytes"
for p in "$VCPU_PIN" "$IO_PIN" "$HOST_PIN"; do
	[[ -z "$p" || "$p" =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || die "bad CPU list: $p"
done
# A TCP stream row is one --mib MiB transfer in writes of the row's size.
# mib_of SIZE: the MiB a stream row of SIZE-byte writes moves (--mib, or by size: see --help).
mib_of() {
	local m
	if [ -n "$MIB" ]; then echo "$MIB"; return; fi
	if (($1 < 1024)); then m=64; elif (($1 < 16384)); then m=256; else m=1024; fi
	[ "$DIR" != g2g ] || m=$((m / 4))
	echo "$m"
}
# mib_text: the MiB per run, for the table's title.
mib_text() {
	local s out=
	if [ -n "$MIB" ]; then echo "$MIB MiB per run"; return; fi
	for s in $SIZES; do out+="${out:+/}$(mib_of "$s")"; done
	echo "$out MiB per run (by write size)"
}
TCP_STREAM=0
[[ "$PROTO" != tcp || "$RR" == 1 ]] || TCP_STREAM=1
if [ -z "$SIZES" ]; then
	case "$DIR" in
	pps | rr | crr) SIZES="64" ;;
	*) SIZES="32 64 128 256 512 1024 2048 4096 8192 16384 32768 65507" ;;
	esac
	[ "$TCP_STREAM" = 0 ] || SIZES="64 1448 65536"
fi
MAX_SIZE=65507
[ "$TCP_STREAM" = 0 ] || MAX_SIZE=65536
read -r -a SIZE_LIST <<<"${SIZES//,/ }"
for s in "${SIZE_LIST[@]}"; do
	if ! [[ "$s" =~ ^[0-9]+$ ]] || [ "$s" -lt 1 ] || [ "$s" -gt $MAX_SIZE ]; then
		die "message sizes must be 1 to $MAX_SIZE: $s"
	fi
	[[ " ${SEEN_SIZES:-} " != *" $s "* ]] || die "message size $s is listed twice (use --rounds)"
	SEEN_SIZES="${SEEN_SIZES:-} $s"
done
[ ${#CONFIGS[@]} -gt 0 ] || CONFIGS=("minivmm:")
# --ceiling: the direction's ceiling row, once (rr: netns:, unless it is already a row)
if [ "$CEILING" = 1 ]; then
	case "$DIR" in
	g2h | pps) CONFIGS+=("tapwrite:") ;;
	h2g) CONFIGS+=("tapread:") ;;
	rr | crr) [[ " ${CONFIGS[*]} " == *" netns: "* || " ${CONFIGS[*]} " == *" netns "* ]] || CONFIGS+=("netns:") ;;
	g2g) die "--ceiling: there is no ceiling row for g2g" ;;
	esac
fi
if [ -n "$PLOT" ]; then
	# Checked now, not after a sweep of many minutes: the program and where its output goes.
	command -v "$GNUPLOT" >/dev/null || die "--plot needs gnuplot ($GNUPLOT not found): apt-get install gnuplot-nox"
	[[ "$PLOT" == /* ]] || PLOT=$PWD/$PLOT
	[[ "$PLOT" == *.svg ]] || die "--plot writes SVG: the file name must end in .svg ($PLOT)"
	[ -d "$(dirname "$PLOT")" ] && [ -w "$(dirname "$PLOT")" ] ||
		die "--plot: $(dirname "$PLOT") is not a writable directory"
fi
if [ "$PROFILE" = 1 ]; then
	command -v perf >/dev/null || die "--profile needs perf: apt-get install linux-perf"
fi
if [ "$BREAKDOWN" = 1 ]; then
	[[ "$PROTO" = udp && "$DIR" != g2g ]] || die "--breakdown measures UDP g2h, h2g, rr and pps"
fi
[[ "$PERF" = 0 || "$BREAKDOWN" = 1 ]] || die "--perf goes with --breakdown"
# perf stat where the host counts; else a note and no counters (a VM often has no PMU).
if [ "$PERF" = 1 ]; then
	if ! command -v perf >/dev/null; then
		PERF=0 PERF_NOTE="perf is not installed"
	elif ! perf stat -x, -e instructions -- true 2>&1 | grep '^[0-9][0-9]*,' >/dev/null; then
		PERF=0 PERF_NOTE="perf cannot count instructions on this host (perf stat -e instructions true)"
	fi
fi
for c in "${CONFIGS[@]}"; do
	case "$c" in
	minivmm | minivmm:* | minivmm@* | qemu | qemu:* | netns | netns:) ;;
	tapwrite | tapwrite: | tapwrite:napi | tapwrite:uring | tapwrite:uring-linked)
		[[ "$DIR" == g2h || "$DIR" == pps ]] || die "tapwrite: measures g2h and pps only"
		[ "$PROTO" = udp ] || die "tapwrite: measures UDP only" ;;
	tapread | tapread: | tapread:uring | tapread:uring-epoll | tapread:backend | tapread:device | \
		tapread:device,*)
		[ "$DIR" = h2g ] || die "tapread: measures h2g only (it receives what the host sends to the guest)"
		[ "$PROTO" = udp ] || die "tapread: measures UDP only" ;;
	*) die "configuration must be minivmm[:OPTS], qemu[:OPTS], netns:, tapwrite:[napi|uring|uring-linked] or tapread:[uring|uring-epoll|backend|device[,OPTS]] ($c)" ;;
	esac
done

bench_paths
# vmm_binary CFG: the minivmm binary a minivmm[@PATH][:OPTS] configuration runs, absolute
vmm_binary() {
	local kind=${1%%:*} bin=$MINIVMM
	[[ "$kind" != minivmm@* ]] || bin=${kind#minivmm@}
	[[ "$bin" == /* ]] || bin=$PWD/$bin
	echo "$bin"
}
UDPPERF=build/examples/udpperf
TAPSEND=build/examples/tapsend
TAPREAD=build/examples/tapread
TCPPERF=build/examples/tcpperf

[ "$(id -u)" = 0 ] || die "needs root (network namespaces, taps)"
command -v ip >/dev/null || die "ip not found: apt-get install iproute2"
bench_require cc
for c in "${CONFIGS[@]}"; do
	case "$c" in
	minivmm*)
		bin=$(vmm_binary "$c")
		[ -x "$bin" ] || die "$bin not found: run 'make'"
		[[ "$("$bin" --help 2>&1)" == *--net* ]] || die "$bin has no --net option"
		;;
	qemu*) bench_require qemu ;;
	esac
	case "$c" in
	minivmm* | qemu*) for w in probe kvm tun; do bench_require "$w"; done ;; # stop at the first missing
	tapwrite* | tapread*) bench_require tun ;;
	esac
done

mkdir -p build/examples
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$UDPPERF" examples/netbench/udpperf.c
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$TAPSEND" examples/netbench/tapsend.c -luring
# tapread's --backend modes link minivmm's own tap backend and event loop: the Makefile knows.
make -s --no-print-directory BUILD=build "$TAPREAD" >/dev/null
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$TCPPERF" examples/netbench/tcpperf.c
UDPPERF=$PWD/$UDPPERF TAPSEND=$PWD/$TAPSEND TAPREAD=$PWD/$TAPREAD TCPPERF=$PWD/$TCPPERF
HOST_TOOL=$UDPPERF
[ "$PROTO" = udp ] || HOST_TOOL=$TCPPERF

# ---------------------------------------------------------------------------------------------
# Clean-up of everything we create; registered before anything is created.
TMP=$(mktemp -d /tmp/netbench.XXXXXX)
NS=${NETBENCH_NS:-netbench-$$} # NETBENCH_NS: the caller's name (a test checks it is gone)
NS_G=("$NS-g0" "$NS-g1") # "guest" namespaces of the netns: configuration
NAMESPACES=()
PIDS=()
PINNERS=()
cleanup() {
	local rc=$? p ns
	trap - EXIT INT TERM HUP
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for ns in "${NAMESPACES[@]}"; do
		# Anything still running in our namespaces was started by us.
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
	if [ "$KEEP_LOGS" = 1 ]; then
		echo "netbench: logs kept in $TMP" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
bench_on_interrupt

add_ns() {
	ip netns add "$1"
	NAMESPACES+=("$1")
	ip -n "$1" link set lo up
}

HOST_IP=10.0.2.1
GUEST_IP=(10.0.2.15 10.0.2.16)
GUEST_MAC=(52:54:00:12:34:56 52:54:00:12:34:57)
TAP=(nbtap0 nbtap1)
PORT=9000
NGUESTS=1
[ "$DIR" = g2g ] && NGUESTS=2

add_ns "$NS"
if [ "$NGUESTS" = 2 ]; then
	ip -n "$NS" link add nbbr0 type bridge
	ip -n "$NS" addr add "$HOST_IP/24" dev nbbr0
	ip -n "$NS" link set nbbr0 up
fi
# One host-side link per guest: a tap for a VM, or a veth for the netns: stand-in. Made
# before each run of a configuration, as the kinds may alternate.
# setup_link I KIND
setup_link() {
	local i=$1 kind=$2
	ip -n "$NS" link del "${TAP[$i]}" 2>/dev/null || true
	if [ "$kind" = netns ]; then
		if ! ip netns list | grep -w "${NS_G[$i]}" >/dev/null; then
			add_ns "${NS_G[$i]}"
		fi
		ip -n "$NS" link add "${TAP[$i]}" type veth peer name eth0 netns "${NS_G[$i]}"
		ip -n "${NS_G[$i]}" link set eth0 address "${GUEST_MAC[$i]}"
		ip -n "${NS_G[$i]}" addr add "${GUEST_IP[$i]}/24" dev eth0
		ip -n "${NS_G[$i]}" link set eth0 up
		# tcpperf crr closes first, as netperf's client: thousands of sockets in TIME_WAIT,
		# whose ports it may take again (timestamps tell old segments from new)
		ip netns exec "${NS_G[$i]}" sysctl -qw net.ipv4.tcp_tw_reuse=1 2>/dev/null || true
	else
		ip -n "$NS" tuntap add dev "${TAP[$i]}" mode tap
	fi
	if [ "$NGUESTS" = 2 ]; then
		ip -n "$NS" link set "${TAP[$i]}" master nbbr0
	else
		ip -n "$NS" addr add "$HOST_IP/24" dev "${TAP[$i]}"
	fi
	ip -n "$NS" link set "${TAP[$i]}" up
}
CUR_LINK_KIND=""

# ---------------------------------------------------------------------------------------------
# Processes

# host_tool NAME ARGS...: udpperf (tcpperf for --proto tcp) in the namespace, in the
# background, stdout in $TMP/NAME.out
host_tool() {
	local name=$1
	shift
	local pin=()
	[ -z "$HOST_PIN" ] || pin=(taskset -c "$HOST_PIN")
	rm -f "$TMP/$name.ready"
	ip netns exec "$NS" "${pin[@]}" "$HOST_TOOL" "$@" --ready-file "$TMP/$name.ready" \
		</dev/null >"$TMP/$name.out" 2>"$TMP/$name.err" &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
	local n=0
	until [ -e "$TMP/$name.ready" ]; do
		kill -0 "$LAST_PID" 2>/dev/null || { cat "$TMP/$name.err" >&2; die "${HOST_TOOL##*/} $1 failed"; }
		n=$((n + 1))
		[ $n -lt 500 ] || die "${HOST_TOOL##*/} $1 did not start"
		sleep 0.01
	done
}

# qemu_offloads on|off: QEMU virtio-net properties for the offloads --offload sets on minivmm
# (off: every segmentation bit too, as QEMU would otherwise keep the ones csum=off leaves).
qemu_offloads() {
	if [ "$1" = on ]; then
		echo "csum=on,guest_csum=on,host_tso4=on,guest_tso4=on"
	else
		echo "csum=off,guest_csum=off,host_tso4=off,guest_tso4=off,host_tso6=off,guest_tso6=off,host_ecn=off,guest_ecn=off,host_ufo=off,guest_ufo=off"
	fi
}

# guest_start NAME CFG I TEST SIZE [SECS]: start guest I (0 or 1) of configuration CFG running
# the probe program TEST for SECS seconds (default --secs), in the background; its console goes to $TMP/NAME.out, the pid of the
# VMM (or stand-in) to $TMP/NAME.pid.
guest_start() {
	local name=$1 cfg=$2 i=$3 test=$4 size=$5 secs=${6:-$SECS}
	local kind=${cfg%%:*} opts=""
	[[ "$cfg" == *:* ]] && opts=${cfg#*:}
	local peer=$HOST_IP
	[ "$DIR" = g2g ] && peer=${GUEST_IP[1]}
	local cmdline="test=$test net.ip=${GUEST_IP[$i]}/24 net.peer=$peer net.port=$PORT"
	cmdline+=" net.peer_port=$PORT net.secs=$secs net.size=$size net.sizes=$size"
	[ "$PROTO" = udp ] || cmdline+=" net.tcp_mib=$(mib_of "$size")"
	[ "$TCP_STREAM" = 0 ] || cmdline+=" net.write=$size"
	[ -z "$OFFLOAD" ] || cmdline+=" net.offload=$OFFLOAD"
	[ -z "${PROBE_ARGS:-}" ] || cmdline+=" $PROBE_ARGS"
	local cmd=() ns=$NS
	case "$kind" in
	minivmm | minivmm@*)
		local net="tap=${TAP[$i]},transport=mmio,mac=${GUEST_MAC[$i]}"
		[ -z "$OFFLOAD" ] || net+=",offload=$OFFLOAD"
		[ -z "$opts" ] || net+=",$opts"
		cmd=("$(vmm_binary "$cfg")" --kernel "$PWD/$PROBE" --net "$net" --cmdline "$cmdline"
			--console stdio --quiet)
		[ "$BREAKDOWN" = 0 ] || cmd+=(--api-sock "$TMP/$name.sock")
		;;
	qemu)
		local dev="virtio-net-device,netdev=n0,mac=${GUEST_MAC[$i]}"
		[ -z "$OFFLOAD" ] || dev+=",$(qemu_offloads "$OFFLOAD")"
		[ -z "$opts" ] || dev+=",$opts"
		cmd=("$QEMU" -accel kvm -name netbench,debug-threads=on -M microvm,acpi=off -global virtio-mmio.force-legacy=false
			-m 256M -nographic -no-reboot -kernel "$PWD/$PROBE" -append "$cmdline"
			-netdev "tap,id=n0,ifname=${TAP[$i]},script=no,downscript=no" -device "$dev"
			-device isa-debug-exit,iobase=0xf4)
		;;
	netns)
		ns=${NS_G[$i]}
		case "$test" in
		udp_stream | pktgen)
			cmd=("$UDPPERF" send --dest "$peer" --port "$PORT" --size "$size" --secs "$secs") ;;
		udp_sink) # like the probe's: counts for SECS from the first datagram
			cmd=("$UDPPERF" sink --port "$PORT" --buf "$BUF" --idle-ms 1000 --secs "$secs"
				--wait-secs "$TIMEOUT" --ready-file "$TMP/$name.ready") ;;
		udp_rr)
			cmd=("$UDPPERF" rr --dest "$peer" --port "$PORT" --size "$size" --secs "$secs") ;;
		tcp_stream)
			cmd=("$TCPPERF" send --dest "$peer" --port "$PORT" --mib "$(mib_of "$size")" --write "$size") ;;
		tcp_sink)
			cmd=("$TCPPERF" recv --port "$PORT" --mib "$(mib_of "$size")" --wait-secs "$TIMEOUT"
				--ready-file "$TMP/$name.ready") ;;
		tcp_rr)
			cmd=("$TCPPERF" rr --dest "$peer" --port "$PORT" --size "$size" --secs "$secs") ;;
		tcp_crr)
			cmd=("$TCPPERF" crr --dest "$peer" --port "$PORT" --size "$size" --secs "$secs") ;;
		esac
		[ -z "$VCPU_PIN" ] || cmd=(taskset -c "$VCPU_PIN" "${cmd[@]}")
		;;
	tapwrite) # the probe's frames; pktgen's are 18-byte datagrams whatever the size
		[ "$test" = pktgen ] && size=18
		cmd=("$TAPSEND" --tap "${TAP[$i]}" --mac "${GUEST_MAC[$i]}" --src "${GUEST_IP[$i]}"
			--dest "$peer" --port "$PORT" --size "$size" --secs "$secs")
		[ -z "$opts" ] || cmd+=("--$opts") # napi, uring or uring-linked
		[ -z "$IO_PIN" ] || cmd=(taskset -c "$IO_PIN" "${cmd[@]}")
		;;
	tapread) # udp_sink: counts for SECS from the first datagram, as the probe does
		cmd=("$TAPREAD" --tap "${TAP[$i]}" --mac "${GUEST_MAC[$i]}" --ip "${GUEST_IP[$i]}"
			--port "$PORT" --secs "$secs" --wait-secs "$TIMEOUT" --ready-file "$TMP/$name.ready")
		[ -z "$opts" ] || cmd+=("--$opts") # uring, uring-epoll, backend, device[,OPTS]
		[ -z "$IO_PIN" ] || cmd=(taskset -c "$IO_PIN" "${cmd[@]}")
		;;
	esac
	echo "$cmdline" >"$TMP/$name.cmdline"
	rm -f "$TMP/$name.pid"
	# The inner shell records the pid the VMM will have (exec keeps it) for CPU accounting.
	# shellcheck disable=SC2016 # $$ and $@ are the inner shell's
	timeout --signal=KILL "$((secs + TIMEOUT))" ip netns exec "$ns" \
		sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/$name.pid" "${cmd[@]}" \
		</dev/null >"$TMP/$name.out" 2>"$TMP/$name.err" &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
	if [[ -n "$VCPU_PIN$IO_PIN" && ( "$kind" == minivmm* || "$kind" == qemu ) ]]; then
		pin_threads "$name" "$kind" &
		PINNERS+=($!)
		PIDS+=($!)
	fi
}

# pin_threads NAME KIND: pin the VMM in $TMP/NAME.pid by thread role (see "Pinning" above), each
# thread once, as soon as it exists; done when every role asked for has a thread pinned (the
# probe has one vCPU), the VMM is gone, or after 10 s. Writes the affinity then observed per
# role to $TMP/NAME.affinity: "vcpu=LIST io=LIST" (LIST as /proc's Cpus_allowed_list; several
# threads of a role with different sets are joined by '/'; "none" if no such thread was found,
# "FAILED" if taskset refused).
pin_threads() {
	local name=$1 kind=$2 n=0 pid task tid comm role list
	local -A pinned=() seen=()
	until [ -s "$TMP/$name.pid" ]; do
		n=$((n + 1))
		[ $n -lt 1000 ] || break
		sleep 0.005
	done
	pid=$(cat "$TMP/$name.pid" 2>/dev/null) || return 0
	n=0
	while kill -0 "$pid" 2>/dev/null && [ $n -lt 2000 ]; do
		for task in /proc/"$pid"/task/*; do
			tid=${task##*/}
			[ -z "${pinned[$tid]:-}" ] || continue
			comm=""
			read -r comm <"$task/comm" 2>/dev/null || continue
			role=""
			case "$kind" in
			minivmm*)
				[[ "$comm" =~ ^vcpu[0-9]+$ ]] && role=vcpu
				[ "$comm" = io ] && role=io
				;;
			qemu)
				[[ "$comm" =~ ^CPU\ [0-9]+/(KVM|TCG)$ ]] && role=vcpu
				[[ "$comm" == "IO "* ]] && role=io
				# the main thread, once it is QEMU (before exec it is the launching shell)
				[[ "$tid" = "$pid" && "$comm" == qemu* ]] && role=io
				;;
			esac
			[ -n "$role" ] || continue
			list=$VCPU_PIN
			[ "$role" = vcpu ] || list=$IO_PIN
			[ -n "$list" ] || continue
			if taskset -pc "$list" "$tid" >/dev/null 2>"$TMP/$name.pin.err"; then
				pinned[$tid]=$role
			else
				kill -0 "$tid" 2>/dev/null || continue
				pinned[$tid]=$role
				seen[$role]=FAILED
			fi
		done
		local want=0 got=0 r
		for r in vcpu io; do
			list=$VCPU_PIN
			[ $r = vcpu ] || list=$IO_PIN
			[ -n "$list" ] || continue
			want=$((want + 1))
			[[ " ${pinned[*]} " != *" $r "* ]] || got=$((got + 1))
		done
		[ $got -lt $want ] || break
		n=$((n + 1))
		sleep 0.005
	done
	# What the threads now have (read back from /proc, not what was asked for).
	local out="" r a
	for r in vcpu io; do
		list=$VCPU_PIN
		[ $r = vcpu ] || list=$IO_PIN
		[ -n "$list" ] || continue
		a=${seen[$r]:-}
		if [ -z "$a" ]; then
			for tid in "${!pinned[@]}"; do
				[ "${pinned[$tid]}" = $r ] || continue
				list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$pid/task/$tid/status" 2>/dev/null)
				[ -n "$list" ] || continue
				[[ "/$a/" == *"/$list/"* ]] || a=${a:+$a/}$list
			done
		fi
		out+=" $r=${a:-none}"
	done
	echo "${out# }" >"$TMP/$name.affinity"
}

# guest_wait_ready NAME PID: wait until a guest sink is listening (a "ready" line on the
# console, the stand-in's ready file), at most 10 s; then a little longer for good measure.
guest_wait_ready() {
	local name=$1 pid=$2 n=0
	until grep -qi 'ready\|listen' "$TMP/$name.out" 2>/dev/null || [ -e "$TMP/$name.ready" ]; do
		kill -0 "$pid" 2>/dev/null || return 1
		n=$((n + 1))
		[ $n -lt 1000 ] || break
		sleep 0.01
	done
	sleep 0.2
}

# result_line NAME: the guest's result line
result_line() {
	tr -d '\r' <"$TMP/$1.out" |
		grep -E '^(probe: (udp_stream|udp_sink|udp_rr|pktgen) |probe: (tcp_stream|tcp_sink) bytes=|probe: tcp_c?rr size=|udpperf: mode=|tcpperf: mode=|tapsend: |tapread: )' |
		tail -n 1 || true
}

cpu_of() { # cpu_of PID: utime+stime in us, or empty
	local f
	f=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
	read -r -a f <<<"$f"
	echo $(((f[11] + f[12]) * 1000000 / $(getconf CLK_TCK)))
}

FAILED=0
row_failed() {
	local name=$1 why=$2
	FAILED=1
	echo "netbench: $CUR_CFG size $CUR_SIZE: $why" >&2
	for f in "$TMP/$name".*; do
		case "$f" in *.out | *.err) [ -s "$f" ] && { echo "--- $(basename "$f")" >&2; tail -n 15 "$f" >&2; } ;; esac
	done
	return 0
}

# wait_pid PID: wait for a background job, ignoring its status
wait_pid() { wait "$1" 2>/dev/null || true; }

# vmm_pid_wait NAME CFG: print the pid in $TMP/NAME.pid once a VMM has its vCPU thread (at
# most 5 s each); fails if the pid never came.
vmm_pid_wait() {
	local name=$1 kind=${2%%:*} n=0 pid
	until [ -s "$TMP/$name.pid" ]; do
		n=$((n + 1))
		[ $n -lt 500 ] || return 1
		sleep 0.01
	done
	pid=$(cat "$TMP/$name.pid")
	if [[ "$kind" == minivmm* || "$kind" == qemu* ]]; then
		n=0
		until cat /proc/"$pid"/task/*/comm 2>/dev/null | grep -x 'vcpu0\|CPU 0/KVM' >/dev/null; do
			n=$((n + 1))
			[ $n -lt 500 ] && kill -0 "$pid" 2>/dev/null || break
			sleep 0.01
		done
	fi
	echo "$pid"
}

# perfstat_start NAME CFG: perf stat counts the process in $TMP/NAME.pid for --secs (--perf).
perfstat_start() {
	local name=$1 pid
	PERFSTAT_PID=""
	pid=$(vmm_pid_wait "$name" "$2") || return 0
	perf stat -x, -e cycles,instructions,cache-misses -p "$pid" -o "$TMP/$name.perfstat" \
		-- sleep "$SECS" >/dev/null 2>"$TMP/$name.perfstat.err" &
	PERFSTAT_PID=$!
	PIDS+=("$PERFSTAT_PID")
}

# breakdown_args TAG CFG: the host tool's words for --breakdown (none without it)
breakdown_args() {
	[ "$BREAKDOWN" = 1 ] || return 0
	echo "--breakdown-file $TMP/$1.bd"
	[[ "$2" != minivmm* ]] || echo "--status-sock $TMP/$1-g.sock"
}

# status_counts JSON: minivmm's status summed over vCPUs and devices: "IO MMIO HLT OTHER KICKS
# WAKEUPS INTERRUPTS POLLS_FOUND POLL_NS POLL_TX" (the probe has one device, its virtio-net; the
# last three, adaptive polling's, are 0 for a build without it)
status_counts() {
	{
		grep -o '"exits":{"io":[0-9]*,"mmio":[0-9]*,"hlt":[0-9]*,"other":[0-9]*}' <<<"$1" |
			tr -c '0-9\n' ' ' | awk '{ a += $1; b += $2; c += $3; d += $4 } END { print a + 0, b + 0, c + 0, d + 0 }'
		grep -o '"kicks":[0-9]*,"wakeups":[0-9]*,"interrupts":[0-9]*' <<<"$1" |
			tr -c '0-9\n' ' ' | awk '{ a += $1; b += $2; c += $3 } END { print a + 0, b + 0, c + 0 }'
		awk -v p="$(grep -o '"polls_found":[0-9]*,"poll_ns":[0-9]*' <<<"$1" | tr -c '0-9\n' ' ')" \
			-v t="$(grep -o '"poll_tx":[0-9]*' <<<"$1" | tr -c '0-9\n' ' ')" \
			'BEGIN { split(p, x, " "); print x[1] + 0, x[2] + 0, t + 0 }'
	} | paste -sd ' '
}

# breakdown_format TAG CFG: the row's breakdown from $TMP/TAG.bd (udpperf --breakdown-file),
# with minivmm's status counters and --perf's counts: R_BD, a file with the text; R_BDJ, JSON.
breakdown_format() {
	local tag=$1 cfg=$2 f=$TMP/$1.bd sb se vmmj="null" perfj="null" vmmt perft=""
	R_BD=$TMP/$tag.bd.txt R_BDJ=null
	if ! [ -s "$f" ] || ! grep -q '^window ' "$f"; then
		echo "    (no breakdown: no two samples while datagrams moved)" >"$R_BD"
		return 0
	fi
	local hz secs cnt
	hz=$(getconf CLK_TCK)
	read -r _ secs cnt < <(grep '^window ' "$f")
	# h2g: the host counts what it sent, the tap drops the excess: per packet the guest received,
	# at the rate it received them (as the VMM CPU column).
	[ "$DIR" != h2g ] || cnt=$(awk -v p="${R_PPS:-0}" -v s="$secs" 'BEGIN { printf "%.0f", p * s }')
	# Per thread, between the two samples: run time from schedstat (ns), else utime+stime ticks.
	awk -v hz="$hz" -v secs="$secs" -v cnt="$cnt" -v txt="$R_BD.threads" '
		$1 == "B" || $1 == "E" {
			k = $2 " " $3; comm = $9
			for (i = 10; i <= NF; i++) comm = comm " " $i
			if ($1 == "B") { brun[k] = $4; btk[k] = $5 + $6; bvol[k] = $7; binv[k] = $8; hasb[k] = 1 }
			else { ord[n++] = k; erun[k] = $4; etk[k] = $5 + $6; evol[k] = $7; einv[k] = $8; cm[k] = comm }
		}
		END {
			printf "    window %.3f s, %d packets; per thread:\n", secs, cnt > txt
			printf "    %-5s %-16s %8s %7s %9s %9s %9s\n", "proc", "thread", "tid", "busy %", "us/pkt", "cs/pkt", "invol/pkt" > txt
			out = ""; idle = 0
			for (j = 0; j < n; j++) {
				k = ord[j]; split(k, w, " ")
				if (erun[k] >= 0 && (!hasb[k] || brun[k] >= 0)) ns = erun[k] - brun[k]
				else ns = (etk[k] - btk[k]) * 1e9 / hz
				vol = evol[k] - bvol[k]; inv = einv[k] - binv[k]
				if (ns <= 0 && vol + inv <= 0) { idle++; continue }
				busy = secs > 0 ? ns / 1e7 / secs : 0
				us = cnt > 0 ? ns / 1e3 / cnt : 0
				cs = cnt > 0 ? (vol + inv) / cnt : 0
				iv = cnt > 0 ? inv / cnt : 0
				printf "    %-5s %-16s %8s %7.1f %9.3f %9.4f %9.4f\n", w[1], cm[k], w[2], busy, us, cs, iv > txt
				c = cm[k]; gsub(/["\\]/, "_", c)
				out = out (out == "" ? "" : ",") sprintf("{\"proc\":\"%s\",\"thread\":\"%s\",\"tid\":%s,\"busy_pct\":%.2f,\"cpu_us_per_pkt\":%.4f,\"ctxsw_per_pkt\":%.5f,\"invol_ctxsw_per_pkt\":%.5f}", w[1], c, w[2], busy, us, cs, iv)
			}
			if (idle) printf "    (%d more threads neither ran nor switched in the window)\n", idle > txt
			printf "%s", out
		}' "$f" >"$R_BD.json"
	cat "$R_BD.threads" >"$R_BD"
	if [[ "$cfg" == minivmm* ]]; then
		sb=$(sed -n 's/^SB //p' "$f") se=$(sed -n 's/^SE //p' "$f")
		if [ -n "$sb" ] && [ -n "$se" ]; then
			local b e
			b=$(status_counts "$sb") e=$(status_counts "$se")
			vmmt=$(awk -v b="$b" -v e="$e" -v n="$cnt" 'BEGIN { split(b, x, " "); split(e, y, " ")
				for (i = 1; i <= 10; i++) d[i] = n > 0 ? (y[i] - x[i]) / n : 0
				printf "exits io %.4f mmio %.4f hlt %.4f other %.4f; kicks %.4f, I/O-thread wake-ups %.4f, interrupts %.4f\n", d[1], d[2], d[3], d[4], d[5], d[6], d[7]
				if (y[8] > x[8] || y[9] > x[9]) printf "polls that found work %.4f, polled %.3f us, transmit frames found without a kick %.4f\n", d[8], d[9] / 1000, d[10]
				else print "-"
				printf "{\"exits_per_pkt\":{\"io\":%.5f,\"mmio\":%.5f,\"hlt\":%.5f,\"other\":%.5f},\"kicks_per_pkt\":%.5f,\"wakeups_per_pkt\":%.5f,\"interrupts_per_pkt\":%.5f,\"polls_found_per_pkt\":%.5f,\"poll_us_per_pkt\":%.5f,\"poll_tx_per_pkt\":%.5f}", d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9] / 1000, d[10] }')
			echo "    minivmm, per packet: $(sed -n 1p <<<"$vmmt")" >>"$R_BD"
			[ "$(sed -n 2p <<<"$vmmt")" = - ] ||
				echo "    minivmm polling, per packet: $(sed -n 2p <<<"$vmmt")" >>"$R_BD"
			vmmj=$(sed -n 3p <<<"$vmmt")
		else
			echo "    minivmm, per packet: (the control socket's status was not read)" >>"$R_BD"
		fi
	else
		echo "    VMM counters (exits, kicks, interrupts): n/a (minivmm only)" >>"$R_BD"
	fi
	if [ "$PERF" = 1 ]; then
		local rate=$R_PPS
		[ "$RR" = 0 ] || rate=$R_TPS
		perft=$(awk -F, -v n="$(awk -v r="${rate:-0}" -v s="$SECS" 'BEGIN { print r * s }')" '
			BEGIN { split("cycles instructions cache-misses", want, " ") }
			$1 ~ /^[0-9]+$/ { for (i = 1; i <= 3; i++) if (index($3, want[i])) v[i] = $1 }
			END {
				if (n <= 0) exit
				for (i = 1; i <= 3; i++) { e = want[i]; k = e; sub(/-/, "_", k)
					t = t sprintf(" %s %s", e, (i in v) ? sprintf("%.1f", v[i] / n) : "-")
					j = j sprintf("%s\"%s_per_pkt\":%s", j == "" ? "" : ",", k, (i in v) ? sprintf("%.2f", v[i] / n) : "null") }
				print substr(t, 2); print "{" j "}" }' "$TMP/$tag-g.perfstat" 2>/dev/null)
		if [ -n "$perft" ]; then
			echo "    perf (the VMM process, --secs from its vCPU's start), per packet: $(head -n 1 <<<"$perft")" >>"$R_BD"
			perfj=$(tail -n 1 <<<"$perft")
		else
			echo "    perf: no counts" >>"$R_BD"
		fi
	fi
	R_BDJ=$(printf '{"window_s":%s,"packets":%s,"threads":[%s],"vmm_counters":%s,"perf":%s}' \
		"$secs" "$cnt" "$(cat "$R_BD.json")" "$vmmj" "$perfj")
}

# profile_start NAME CFG: perf samples the process in $TMP/NAME.pid for --secs, from when a VMM
# has its vCPU thread (perf -p follows only the threads that exist when it attaches).
profile_start() {
	local name=$1 pid
	PROF_PID=""
	pid=$(vmm_pid_wait "$name" "$2") || return 0
	perf record -q -F 997 -p "$pid" -o "$TMP/$name.perf" -- sleep "$SECS" \
		>/dev/null 2>"$TMP/$name.perf.err" &
	PROF_PID=$!
	PIDS+=("$PROF_PID")
}

# profile_finish NAME: wait for perf; R_PROF: a file summarising where the CPU time went.
profile_finish() {
	local name=$1
	[ -z "$PROF_PID" ] || wait_pid "$PROF_PID"
	R_PROF=$TMP/$name.profile
	[ -s "$TMP/$name.perf" ] || { echo "    (no samples)" >"$R_PROF"; return 0; }
	# Per thread: its share of all samples, split by where they landed (kernel, binary, libs).
	# (fields split at '|': QEMU's thread names have spaces, "CPU 0/KVM")
	perf report -i "$TMP/$name.perf" --stdio -q --no-children --sort comm,dso -t '|' 2>/dev/null |
		awk -F'|' '{ for (i = 1; i <= NF; i++) gsub(/^ +| +$/, "", $i) }
		$1 ~ /%$/ { p = $1 + 0; t = $2; d = $3
			if (!(t in tot)) order[n++] = t
			tot[t] += p; part[t] = part[t] sprintf("%s %.1f%%, ", d == "[kernel.kallsyms]" ? "kernel" : d, p) }
		END { for (i = 0; i < n; i++) { t = order[i]; s = part[t]; sub(/, $/, "", s)
			printf "    thread %-16s %5.1f%%: %s\n", t, tot[t], s } }' >"$R_PROF"
	echo "    top kernel symbols:" >>"$R_PROF"
	perf report -i "$TMP/$name.perf" --stdio -q --no-children --sort comm,sym -t '|' 2>/dev/null |
		awk -F'|' '{ for (i = 1; i <= NF; i++) gsub(/^ +| +$/, "", $i) }
		$1 ~ /%$/ && $3 ~ /^\[k\] / && n++ < 8 {
			printf "      %6s  %-16s %s\n", $1, $2, substr($3, 5) }' \
			>>"$R_PROF"
}

# guest_against_host TAG CFG TOOL TEST SIZE: the host tool (sink or echo) in the background,
# then guest 0 running TEST to its end; the tool stops 1 s after its last datagram (stopped
# here if nothing came at all). Sets hl (the tool's result) and line (the guest's).
guest_against_host() {
	local tag=$1 cfg=$2 tool=$3 test=$4 size=$5 hpid gpid
	# shellcheck disable=SC2046 # breakdown_args: words without spaces
	host_tool "$tag-host" "$tool" --bind "$HOST_IP" --port "$PORT" --buf "$BUF" \
		--idle-ms 1000 --wait-secs "$((SECS + TIMEOUT))" --cpu-pid-file "$TMP/$tag-g.pid" \
		$(breakdown_args "$tag" "$cfg")
	hpid=$LAST_PID
	guest_start "$tag-g" "$cfg" 0 "$test" "$size"
	gpid=$LAST_PID
	[ "$PROFILE" = 0 ] || profile_start "$tag-g" "$cfg"
	[ "$PERF" = 0 ] || perfstat_start "$tag-g" "$cfg"
	wait_pid "$gpid"
	[ "$PERF" = 0 ] || [ -z "$PERFSTAT_PID" ] || wait_pid "$PERFSTAT_PID"
	[ "$PROFILE" = 0 ] || profile_finish "$tag-g"
	sleep 1.2
	kill -TERM "$hpid" 2>/dev/null || true
	wait_pid "$hpid"
	hl=$(cat "$TMP/$tag-host.out")
	line=$(result_line "$tag-g")
}

# host_end PID: the host tool ends by itself once its connection closes; stopped after 5 s
# (a guest that never connected).
host_end() {
	local n=0
	while kill -0 "$1" 2>/dev/null && [ $n -lt 500 ]; do
		n=$((n + 1))
		sleep 0.01
	done
	kill -TERM "$1" 2>/dev/null || true
	wait_pid "$1"
}

# mss_of NAME LINE: the MSS the guest sent with (its console), or the stand-in's (LINE).
mss_of() {
	local m
	m=$(tr -d '\r' <"$TMP/$1.out" | sed -n 's/^probe: tcp_[a-z]* connected mss=\([0-9]*\).*/\1/p' | tail -n 1)
	[ -n "$m" ] || m=$(kv mss "$2")
	echo "$m"
}

# tcp_write_check NAME LINE SIZE: the sender (the probe's result LINE or tcpperf send's) wrote
# in writes of SIZE bytes: it says write=SIZE and made at least one call per write.
tcp_write_check() {
	tcp_writes_verdict "$2" "$3" "$(mib_of "$3")" || { row_failed "$1" "$VERDICT"; return 1; }
}

# offload_of NAME: R_OFFL, the offloads the probe negotiated (its "probe: net" line), if any.
offload_of() {
	R_OFFL=""
	[ -e "$TMP/$1.out" ] || return 0
	R_OFFL=$(tr -d '\r' <"$TMP/$1.out" | sed -n 's/^probe: net .* offload=\([^ ]*\).*/\1/p' | tail -n 1)
}

# tcp_guest_against_host TAG CFG PROGRAM SIZE HPID: the guest's PROGRAM (TAG-g) against the host
# tool already started (HPID, TAG-host): waits for both, the guest's VMM profiled with --profile;
# sets the caller's hl (the host tool's result line) and line (the guest's).
tcp_guest_against_host() {
	local gpid
	guest_start "$1-g" "$2" 0 "$3" "$4"
	gpid=$LAST_PID
	[ "$PROFILE" = 0 ] || profile_start "$1-g" "$2"
	wait_pid "$gpid"
	[ "$PROFILE" = 0 ] || profile_finish "$1-g"
	host_end "$5"
	hl=$(cat "$TMP/$1-host.out" 2>/dev/null || true)
	line=$(result_line "$1-g")
}

# tcp_row_valid TAG LINE HL: tcp_verdict for this --dir from the guest's result LINE (g2g:
# guest A's, HL guest B's) and the host tool's HL; a row that is not valid is marked failed.
tcp_row_valid() {
	local con=$TMP/$1-g.out peer=
	[ "$DIR" != g2g ] || con=$TMP/$1-a.out peer=$TMP/$1-b.out
	tcp_verdict "$DIR" "$con" "$2" "$3" "$peer" || { row_failed "$1-$VERDICT_END" "$VERDICT"; return 1; }
}

# run_tcp TAG CFG SIZE: one --proto tcp measurement (see run_one).
run_tcp() {
	local tag=$1 cfg=$2 size=$3 gpid hl line
	local pin=()
	[ -z "$HOST_PIN" ] || pin=(taskset -c "$HOST_PIN")
	case "$DIR" in
	g2h)
		host_tool "$tag-host" recv --bind "$HOST_IP" --port "$PORT" --mib "$(mib_of "$size")" \
			--wait-secs "$((SECS + TIMEOUT))"
		tcp_guest_against_host "$tag" "$cfg" tcp_stream "$size" "$LAST_PID"
		tcp_row_valid "$tag" "$line" "$hl" || return 0
		tcp_write_check "$tag-g" "$line" "$size" || return 0
		R_ELAPSED=$(kv secs "$hl") R_MBPS=$(kv mbps "$hl") R_MSS=$(mss_of "$tag-g" "$line")
		R_TSO=$(kv tso_frames "$line") R_SEGS=$(kv segs "$line") R_SMALL=$(kv small_segs "$line")
		;;
	h2g)
		guest_start "$tag-g" "$cfg" 0 tcp_sink "$size"
		gpid=$LAST_PID
		guest_wait_ready "$tag-g" "$gpid" || { row_failed "$tag-g" "the guest sink did not start"; return; }
		[ "$PROFILE" = 0 ] || profile_start "$tag-g" "$cfg"
		hl=$(ip netns exec "$NS" "${pin[@]}" "$TCPPERF" send --dest "${GUEST_IP[0]}" \
			--port "$PORT" --mib "$(mib_of "$size")" --write "$size" 2>"$TMP/$tag-host.err") || true
		[ "$PROFILE" = 0 ] || profile_finish "$tag-g"
		echo "$hl" >"$TMP/$tag-host.out"
		wait_pid "$gpid"
		line=$(result_line "$tag-g")
		tcp_row_valid "$tag" "$line" "$hl" || return 0
		tcp_write_check "$tag-host" "$hl" "$size" || return 0
		# the host's time (connect to close, three decimals), the rate the guest received
		R_ELAPSED=$(kv secs "$hl") R_MBPS=$(kv mbps "$line") R_MSS=$(mss_of "$tag-g" "$hl")
		R_SEGS=$(kv segs "$hl")
		;;
	g2g)
		# B listens first; A's stream goes to it over the bridge; B checks every byte.
		guest_start "$tag-b" "$cfg" 1 tcp_sink "$size"
		local bpid=$LAST_PID
		guest_wait_ready "$tag-b" "$bpid" || { row_failed "$tag-b" "guest B's sink did not start"; return; }
		guest_start "$tag-a" "$cfg" 0 tcp_stream "$size"
		gpid=$LAST_PID
		[ "$PROFILE" = 0 ] || profile_start "$tag-b" "$cfg" # the receiving VMM
		wait_pid "$gpid"
		[ "$PROFILE" = 0 ] || profile_finish "$tag-b"
		wait_pid "$bpid"
		hl=$(result_line "$tag-b") line=$(result_line "$tag-a")
		tcp_row_valid "$tag" "$line" "$hl" || return 0
		tcp_write_check "$tag-a" "$line" "$size" || return 0
		# the rate B received at; the elapsed time: B's (the probe's first to last byte), or
		# the stand-in's accept to close
		R_ELAPSED=$(kv secs "$hl") R_MBPS=$(kv mbps "$hl") R_MSS=$(mss_of "$tag-a" "$line")
		R_TSO=$(kv tso_frames "$line") R_SEGS=$(kv segs "$line") R_SMALL=$(kv small_segs "$line")
		;;
	rr)
		host_tool "$tag-host" rr-server --bind "$HOST_IP" --port "$PORT" --size "$size" \
			--wait-secs "$((SECS + TIMEOUT))"
		tcp_guest_against_host "$tag" "$cfg" tcp_rr "$size" "$LAST_PID"
		tcp_row_valid "$tag" "$line" "$hl" || return 0
		R_ELAPSED=$(kv secs "$line") R_TPS=$(kv tps "$line") R_RECV=$(kv trans "$line")
		R_P50=$(kv lat_us_p50 "$line") R_P90=$(kv p90 "$line") R_P99=$(kv p99 "$line")
		;;
	crr)
		# the server ends by itself 2 s after its last connection
		host_tool "$tag-host" crr-server --bind "$HOST_IP" --port "$PORT" --size "$size" \
			--wait-secs "$((SECS + TIMEOUT))" --idle-ms 2000
		tcp_guest_against_host "$tag" "$cfg" tcp_crr "$size" "$LAST_PID"
		tcp_row_valid "$tag" "$line" "$hl" || return 0
		R_ELAPSED=$(kv secs "$line") R_TPS=$(kv tps "$line") R_RECV=$(kv trans "$line")
		R_P50=$(kv lat_us_p50 "$line") R_P90=$(kv p90 "$line") R_P99=$(kv p99 "$line")
		;;
	esac
}

# row_mode_ok TAG CFG LINE: the row measured what its configuration names. tapwrite:X and
# tapread:X: the stand-in (tapsend, tapread) worked that way (its result line's mode=; plain:
# write, read). minivmm with tx-uring=on: it did not fall back to writev (it warns when it
# does).
row_mode_ok() {
	local tag=$1 cfg=$2 line=$3 plain want="" got m
	case "$cfg" in
	tapwrite*) plain=write ;;
	tapread*) plain=read ;;
	minivmm*tx-uring=on*)
		! grep -q "transmitting with writev" "$TMP/$tag.err" 2>/dev/null ||
			row_failed "$tag" "tx-uring=on, but $(grep -m1 "transmitting with writev" "$TMP/$tag.err")"
		return 0 ;;
	*) return 0 ;;
	esac
	[[ "$cfg" != *:* ]] || want=${cfg#*:}
	got=$(kv mode "$line")
	[ "$got" = "${want:-$plain}" ] ||
		row_failed "$tag" "${cfg%%:*}'s stand-in ran with mode=$got, not ${want:-$plain}"
}

# run_one CFG SIZE: one measurement; sets R_SOCK R_ELAPSED R_MBPS R_PPS R_SENT R_RECV R_CPU
# (us per packet) R_TPS R_P50 R_P90 R_P99 ("" where unknown).
run_one() {
	local cfg=$1 size=$2 kind=${1%%:*} i
	CUR_CFG=$cfg CUR_SIZE=$size
	R_SOCK="" R_ELAPSED="" R_MBPS="" R_PPS="" R_SENT="" R_RECV="" R_CPU=""
	R_TPS="" R_P50="" R_P90="" R_P99="" R_MSZ="" R_PROF="" R_AFF="" R_TSO="" R_OFFL=""
	R_MSS="" R_SEGS="" R_SMALL=""
	R_BD="" R_BDJ=""
	local link=tap # a veth for netns:, a tap for all others (the VMMs, tapwrite:, tapread:)
	[ "$kind" != netns ] || link=netns
	if [ "$CUR_LINK_KIND" != "$link" ]; then
		for ((i = 0; i < NGUESTS; i++)); do setup_link "$i" "$link"; done
		CUR_LINK_KIND=$link
	fi
	local tag="${kind%%@*}-$size-$RANDOM" line hl gpid cpu0 cpu1
	if [ "$PROTO" = tcp ]; then
		run_tcp "$tag" "$cfg" "$size"
		pinned_affinity "$tag"
		offload_of "$tag-g"
		[ -n "$R_OFFL" ] || offload_of "$tag-a"
		return 0
	fi
	case "$DIR" in
	g2h | pps)
		local test=udp_stream
		[ "$DIR" = pps ] && test=pktgen
		guest_against_host "$tag" "$cfg" sink "$test" "$size"
		[ -n "$hl" ] || { row_failed "$tag-host" "no result from the host sink"; return; }
		R_SOCK=$(kv rcvbuf "$hl") R_ELAPSED=$(kv secs "$hl") R_MBPS=$(kv mbps "$hl")
		R_PPS=$(kv pps "$hl") R_RECV=$(kv msgs "$hl")
		# what arrived: pktgen sends minimum-size frames whatever the size asked for
		[ "$DIR" != pps ] || R_MSZ=$(kv size "$hl")
		if [ -n "$line" ]; then
			R_SENT=$(kv msgs "$line")
			[ -n "$R_SENT" ] || R_SENT=$(kv pkts "$line")
			row_mode_ok "$tag-g" "$cfg" "$line"
		else
			row_failed "$tag-g" "no result line from the guest"
		fi
		local cpu n=${R_SENT:-$R_RECV}
		cpu=$(kv cpu_us "$hl")
		if [ -n "$cpu" ] && [ "$cpu" != -1 ] && [ "${n:-0}" -gt 0 ]; then
			R_CPU=$(awk -v c="$cpu" -v n="$n" 'BEGIN { printf "%.3f", c / n }')
		fi
		[ "${R_RECV:-0}" -gt 0 ] || row_failed "$tag-g" "the host received nothing"
		;;
	h2g)
		guest_start "$tag-g" "$cfg" 0 udp_sink "$size"
		gpid=$LAST_PID
		guest_wait_ready "$tag-g" "$gpid" || { row_failed "$tag-g" "the guest sink did not start"; return; }
		local pin=()
		[ -z "$HOST_PIN" ] || pin=(taskset -c "$HOST_PIN")
		[ "$PROFILE" = 0 ] || profile_start "$tag-g" "$cfg"
		[ "$PERF" = 0 ] || perfstat_start "$tag-g" "$cfg"
		# The guest sink counts for --secs from the first datagram: send a second longer.
		# shellcheck disable=SC2046 # breakdown_args: words without spaces
		hl=$(ip netns exec "$NS" "${pin[@]}" "$UDPPERF" send --dest "${GUEST_IP[0]}" \
			--port "$PORT" --size "$size" --secs "$((SECS + 1))" --buf "$BUF" \
			--cpu-pid-file "$TMP/$tag-g.pid" $(breakdown_args "$tag" "$cfg") \
			2>"$TMP/$tag-host.err") || true
		[ "$PERF" = 0 ] || [ -z "$PERFSTAT_PID" ] || wait_pid "$PERFSTAT_PID"
		[ "$PROFILE" = 0 ] || profile_finish "$tag-g"
		echo "$hl" >"$TMP/$tag-host.out"
		# the guest sink ends by itself once the stream stops; the stand-in after 1 s idle
		wait_pid "$gpid"
		line=$(result_line "$tag-g")
		[ -n "$line" ] || { row_failed "$tag-g" "no result line from the guest"; return; }
		row_mode_ok "$tag-g" "$cfg" "$line"
		# (no loss figure: the host sends longer than the guest counts)
		R_SOCK=$(kv sndbuf "$hl")
		R_RECV=$(kv msgs "$line") R_ELAPSED=$(kv secs "$line") R_MBPS=$(kv mbps "$line")
		R_PPS=$(awk -v m="$R_RECV" -v s="$R_ELAPSED" 'BEGIN { printf "%.0f", (s > 0 ? m / s : 0) }')
		# The VMM's CPU over the whole send, per packet at the rate the guest received.
		local cpu hs
		cpu=$(kv cpu_us "$hl") hs=$(kv secs "$hl")
		if [ -n "$cpu" ] && [ "$cpu" != -1 ] && [ "${R_RECV:-0}" -gt 0 ]; then
			R_CPU=$(awk -v c="$cpu" -v p="$R_PPS" -v s="$hs" 'BEGIN { printf "%.3f", c / (p * s) }')
		fi
		;;
	rr)
		guest_against_host "$tag" "$cfg" echo udp_rr "$size"
		[ -n "$line" ] || { row_failed "$tag-g" "no result line from the guest"; return; }
		row_mode_ok "$tag-g" "$cfg" "$line"
		R_SOCK=$(kv rcvbuf "$hl") R_ELAPSED=$(kv secs "$line") R_TPS=$(kv tps "$line")
		R_P50=$(kv lat_us_p50 "$line") R_P90=$(kv p90 "$line") R_P99=$(kv p99 "$line")
		R_RECV=$(kv trans "$line")
		local cpu
		cpu=$(kv cpu_us "$hl")
		if [ -n "$cpu" ] && [ "$cpu" != -1 ] && [ "${R_RECV:-0}" -gt 0 ]; then
			R_CPU=$(awk -v c="$cpu" -v n="$R_RECV" 'BEGIN { printf "%.3f", c / n }')
		fi
		;;
	g2g)
		guest_start "$tag-b" "$cfg" 1 udp_sink "$size"
		local bpid=$LAST_PID
		guest_wait_ready "$tag-b" "$bpid" || { row_failed "$tag-b" "guest B's sink did not start"; return; }
		local bvmm
		bvmm=$(cat "$TMP/$tag-b.pid" 2>/dev/null || true)
		cpu0=$(cpu_of "$bvmm")
		# B ends by itself, maybe before A: keep its latest CPU time while it runs.
		while c=$(cpu_of "$bvmm") && [ -n "$c" ]; do
			echo "$c" >"$TMP/$tag-b.cpu"
			sleep 0.05
		done &
		local poller=$!
		PIDS+=("$poller")
		# B counts for --secs from its first datagram: A sends a second longer.
		guest_start "$tag-a" "$cfg" 0 udp_stream "$size" "$((SECS + 1))"
		gpid=$LAST_PID
		[ "$PROFILE" = 0 ] || profile_start "$tag-b" "$cfg" # the receiving VMM
		wait_pid "$gpid"
		[ "$PROFILE" = 0 ] || profile_finish "$tag-b"
		wait_pid "$bpid"
		wait_pid "$poller"
		cpu1=$(cat "$TMP/$tag-b.cpu" 2>/dev/null || true)
		line=$(result_line "$tag-b")
		[ -n "$line" ] || { row_failed "$tag-b" "no result line from guest B"; return; }
		R_RECV=$(kv msgs "$line") R_ELAPSED=$(kv secs "$line") R_MBPS=$(kv mbps "$line")
		R_PPS=$(awk -v m="$R_RECV" -v s="$R_ELAPSED" 'BEGIN { printf "%.0f", (s > 0 ? m / s : 0) }')
		R_SOCK=$(kv rcvbuf "$line")
		[ -n "$(result_line "$tag-a")" ] || row_failed "$tag-a" "no result line from guest A"
		if [ -n "$cpu0" ] && [ -n "$cpu1" ] && [ "${R_RECV:-0}" -gt 0 ]; then
			R_CPU=$(awk -v c="$((cpu1 - cpu0))" -v n="$R_RECV" 'BEGIN { printf "%.3f", c / n }')
		fi
		;;
	esac
	pinned_affinity "$tag"
	[ "$BREAKDOWN" = 0 ] || breakdown_format "$tag" "$cfg"
	return 0
}

# pinned_affinity TAG: R_AFF, the affinity pin_threads observed on this run's VMM(s) (for g2g
# both VMMs, "A: ... B: ..." if they differ); the row fails if a role could not be pinned.
pinned_affinity() {
	local tag=$1 p f affs=() v
	for p in "${PINNERS[@]}"; do wait_pid "$p"; done
	PINNERS=()
	for f in "$TMP/$tag-g.affinity" "$TMP/$tag-a.affinity" "$TMP/$tag-b.affinity"; do
		[ -s "$f" ] && affs+=("$(cat "$f")")
	done
	[ ${#affs[@]} -gt 0 ] || return 0
	R_AFF=${affs[0]}
	if [ ${#affs[@]} = 2 ] && [ "${affs[0]}" != "${affs[1]}" ]; then R_AFF="A: ${affs[0]} B: ${affs[1]}"; fi
	for v in "${affs[@]}"; do
		[[ " $v" != *=none* && " $v" != *=FAILED* ]] ||
			row_failed "$tag-g" "could not pin the VMM's threads by role: $v"
	done
}

# ---------------------------------------------------------------------------------------------
# Measure: per size and round, every configuration in turn (A, B, A, B ...)
declare -A RES ROUND SPEEDUP SPEEDS
NCFG=${#CONFIGS[@]}
KEYS=(SOCK ELAPSED MBPS PPS SENT RECV CPU TPS P50 P90 P99 MSZ PROF AFF TSO OFFL BD BDJ MSS SEGS SMALL)
# Which configuration goes first alternates (A, B, then B, A, over sizes and rounds alike), so
# that drift, warm-up and whatever the previous run left behind (host caches, the CPU's
# frequency, a neighbour's load) fall on both equally.
TURN=0
for size in "${SIZE_LIST[@]}"; do
	for ((r = 0; r < ROUNDS; r++)); do
		ORDER=()
		for ((c = 0; c < NCFG; c++)); do
			if ((TURN % 2)); then ORDER+=($((NCFG - 1 - c))); else ORDER+=("$c"); fi
		done
		TURN=$((TURN + 1))
		for c in "${ORDER[@]}"; do
			[ ! -t 2 ] || printf 'netbench: %s, %s bytes, round %d/%d ...\r' \
				"${CONFIGS[$c]}" "$size" $((r + 1)) "$ROUNDS" >&2
			run_one "${CONFIGS[$c]}" "$size"
			for k in "${KEYS[@]}"; do
				v=R_$k
				ROUND[$r,$c,$size,$k]=${!v}
			done
		done
	done
done

[ ! -t 2 ] || printf '\033[K' >&2

# The figure --compare compares; the median of a list of numbers (the lower middle one).
metric() { case "$DIR" in rr | crr) echo TPS ;; pps) echo PPS ;; *) echo MBPS ;; esac; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# Each configuration's row: its median round by the metric. B's speedup over A in percent: the
# median of the per-round speedups (rounds where either failed are left out).
M=$(metric)
for size in "${SIZE_LIST[@]}"; do
	for ((c = 0; c < NCFG; c++)); do
		pick=$(for ((r = 0; r < ROUNDS; r++)); do
			v=${ROUND[$r,$c,$size,$M]:-}
			[ -z "$v" ] || echo "$v $r"
		done | sort -g | awk '{ r[NR] = $2 } END { if (NR) print r[int((NR + 1) / 2)] }')
		[ -n "$pick" ] || pick=0
		for k in "${KEYS[@]}"; do RES[$c,$size,$k]=${ROUND[$pick,$c,$size,$k]:-}; done
	done
	[ "$NCFG" -ge 2 ] || continue
	SPEEDS[$size]=$(for ((r = 0; r < ROUNDS; r++)); do
		a=${ROUND[$r,0,$size,$M]:-} b=${ROUND[$r,1,$size,$M]:-}
		[ -n "$a" ] && [ -n "$b" ] || continue
		awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.1f\n", (b / a - 1) * 100 }'
	done | paste -sd ' ')
	SPEEDUP[$size]=$(tr ' ' '\n' <<<"${SPEEDS[$size]}" | median)
done
speedup() { echo "${SPEEDUP[$1]:-}"; } # speedup SIZE
# spread SIZE: "(MIN to MAX)" of the per-round speedups, when there were several rounds
spread() {
	tr ' ' '\n' <<<"${SPEEDS[$1]:-}" | sort -g |
		awk 'NF { v[++n] = $1 } END { if (n > 1) printf "(%s to %s)", v[1], v[n] }'
}

# title: the test's name, first line of the table and the plot's title
title() {
	[ "$PROTO" = udp ] || case "$DIR" in
	g2h) echo "TCP STREAM TEST from ${GUEST_IP[0]} (guest tcp_stream) to $HOST_IP (host tcpperf recv) : $(mib_text), message size = write size" ;;
	h2g) echo "TCP STREAM TEST from $HOST_IP (host tcpperf send) to ${GUEST_IP[0]} (guest tcp_sink) : $(mib_text), message size = write size" ;;
	g2g) echo "TCP STREAM TEST from ${GUEST_IP[0]} (guest A tcp_stream) to ${GUEST_IP[1]} (guest B tcp_sink) over a bridge : $(mib_text), message size = write size" ;;
	rr) echo "TCP REQUEST/RESPONSE TEST from ${GUEST_IP[0]} (guest tcp_rr) to $HOST_IP (host tcpperf rr-server) : $SECS s per size" ;;
	crr) echo "TCP CONNECT/REQUEST/RESPONSE TEST from ${GUEST_IP[0]} (guest tcp_crr) to $HOST_IP (host tcpperf crr-server) : $SECS s per size, a connection per transaction" ;;
	esac
	[ "$PROTO" = tcp ] || case "$DIR" in
	g2h) echo "UDP UNIDIRECTIONAL SEND TEST from ${GUEST_IP[0]} (guest) to $HOST_IP (host) : $SECS s per size" ;;
	h2g) echo "UDP UNIDIRECTIONAL SEND TEST from $HOST_IP (host) to ${GUEST_IP[0]} (guest) : $SECS s per size" ;;
	pps) echo "UDP PACKET RATE TEST from ${GUEST_IP[0]} (guest pktgen) to $HOST_IP (host) : $SECS s per size" ;;
	rr) echo "UDP REQUEST/RESPONSE TEST from ${GUEST_IP[0]} (guest) to $HOST_IP (host echo) : $SECS s per size" ;;
	g2g) echo "UDP UNIDIRECTIONAL SEND TEST from ${GUEST_IP[0]} (guest A) to ${GUEST_IP[1]} (guest B) over a bridge : $SECS s per size" ;;
	esac
}

table() {
	title
	[ -z "$OFFLOAD" ] || echo "offloads $OFFLOAD in every VM (probe net.offload=$OFFLOAD, minivmm offload=$OFFLOAD, qemu $(qemu_offloads "$OFFLOAD"))"
	[ "$ROUNDS" = 1 ] || echo "each row: the median of $ROUNDS rounds; speedup: the median of the per-round speedups (lowest to highest)"
	CW=10
	for ((c = 0; c < NCFG; c++)); do [ ${#CONFIGS[$c]} -lt $CW ] || CW=$((${#CONFIGS[$c]} + 1)); done
	sp_h1="" sp_h2="" sp_h3=""
	[ "$NCFG" -ge 2 ] && sp_h1=" Speedup" sp_h2=" B vs A" sp_h3=" %"
	if [ "$RR" = 1 ]; then
		printf "%-${CW}s %-8s %-8s %-8s %-10s %-9s %-9s %-9s %-8s%s\n" Config Socket Request Elapsed Trans. Latency Latency Latency "VMM CPU" "$sp_h1"
		printf "%-${CW}s %-8s %-8s %-8s %-10s %-9s %-9s %-9s %-8s%s\n" "" Size Size Time Rate p50 p90 p99 "per tr." "$sp_h2"
		printf "%-${CW}s %-8s %-8s %-8s %-10s %-9s %-9s %-9s %-8s%s\n" "" bytes bytes secs "per sec" us us us us "$sp_h3"
	else
		printf "%-${CW}s %-8s %-8s %-8s %-11s %-10s %-8s %-8s%s\n" Config Socket Message Elapsed Throughput Packets Loss "VMM CPU" "$sp_h1"
		printf "%-${CW}s %-8s %-8s %-8s %-11s %-10s %-8s %-8s%s\n" "" Size Size Time "(received)" "(recv'd)" "" "per pkt" "$sp_h2"
		printf "%-${CW}s %-8s %-8s %-8s %-11s %-10s %-8s %-8s%s\n" "" bytes bytes secs "10^6bits/s" "per sec" "%" us "$sp_h3"
	fi
	echo
	for size in "${SIZE_LIST[@]}"; do
		for ((c = 0; c < NCFG; c++)); do
			d() { local v=${RES[$c,$size,$1]}; echo "${v:--}"; }
			sp=""
			[ "$NCFG" -ge 2 ] && [ $c = 1 ] && sp=" $(speedup "$size") $(spread "$size")"
			if [ "$RR" = 1 ]; then
				printf "%-${CW}s %-8s %-8s %-8s %-10s %-9s %-9s %-9s %-8s%s\n" "${CONFIGS[$c]}" \
					"$(d SOCK)" "$size" "$(d ELAPSED)" "$(d TPS)" "$(d P50)" "$(d P90)" "$(d P99)" "$(d CPU)" "$sp"
			else
				loss=-
				s=${RES[$c,$size,SENT]} r=${RES[$c,$size,RECV]}
				if [ -n "$s" ] && [ -n "$r" ] && [ "$s" -gt 0 ]; then
					loss=$(awk -v s="$s" -v r="$r" 'BEGIN { printf "%.1f", (s - r) * 100 / s }')
				fi
				printf "%-${CW}s %-8s %-8s %-8s %-11s %-10s %-8s %-8s%s\n" "${CONFIGS[$c]}" \
					"$(d SOCK)" "${RES[$c,$size,MSZ]:-$size}" "$(d ELAPSED)" "$(d MBPS)" "$(d PPS)" "$loss" "$(d CPU)" "$sp"
			fi
		done
	done
}

# ---------------------------------------------------------------------------------------------
# --plot: the rows above (RES, as the table and --json print them) drawn by gnuplot

# gq STRING: STRING as a gnuplot string literal (single quotes: only ' is special, doubled)
gq() { printf "'%s'" "${1//\'/\'\'}"; }
# is_ceiling C: configuration C is the ceiling row, drawn dashed
is_ceiling() {
	case "${CONFIGS[$1]}" in
	tapwrite | tapwrite:* | tapread | tapread:*) return 0 ;;
	netns | netns:) [ "$CEILING" = 1 ] && [ "$RR" = 1 ] ;;
	*) return 1 ;;
	esac
}
# plot_data FILE: one block per configuration (gnuplot's "index" C): message size, the metric
# --compare compares, p50, p99; "-" where the row has none.
plot_data() {
	local c size
	for ((c = 0; c < NCFG; c++)); do
		[ $c = 0 ] || printf '\n\n'
		for size in "${SIZE_LIST[@]}"; do
			printf '%s %s %s %s\n' "${RES[$c,$size,MSZ]:-$size}" "${RES[$c,$size,$M]:--}" \
				"${RES[$c,$size,P50]:--}" "${RES[$c,$size,P99]:--}"
		done
	done >"$1"
}
# plot_lines DATA COLUMN [SUFFIX POINT WIDTH]: a "plot" command's terms, one line per
# configuration, each in its own colour
plot_lines() {
	local dat=$1 col=$2 suffix=${3:-} pt=${4:-7} lw=${5:-2} c dt sep=""
	for ((c = 0; c < NCFG; c++)); do
		dt=1
		! is_ceiling $c || dt=2
		printf '%s%s index %d using 1:%d with linespoints lc %d lw %s pt %s dt %d title %s' "$sep" \
			"$(gq "$dat")" $c "$col" $((c + 1)) "$lw" "$pt" $dt "$(gq "${CONFIGS[$c]}$suffix")"
		sep=", "
	done
}
# plot_svg: write --plot's file (through a temporary file: a failed plot leaves none behind)
plot_svg() {
	local dat=$TMP/plot.dat gp=$TMP/plot.gp out=$TMP/plot.svg xs lo hi tics ylabel=
	plot_data "$dat"
	xs=$(awk 'NF && $1 != "-" { print $1 }' "$dat" | sort -gu)
	lo=$(head -n 1 <<<"$xs") hi=$(tail -n 1 <<<"$xs")
	tics=$(sed 's/.*/"&" &/' <<<"$xs" | paste -sd ,)
	case "$M" in TPS) ylabel="transactions/s" ;; PPS) ylabel="packets/s (received)" ;; *) ylabel="throughput, Mbit/s (received)" ;; esac
	{
		echo "set terminal svg size $([ "$RR" = 1 ] && echo 1200,520 || echo 900,520) dynamic noenhanced font 'Arial,12' background 'white'"
		echo "set output $(gq "$out")"
		echo "set datafile missing '-'"
		echo "set logscale x 2"
		# a margin either side, so that the first and last sizes get their tics
		echo "set xrange [$lo / 1.5 : $hi * 1.5]"
		echo "set xtics ($tics)"
		echo "set xlabel 'message size, bytes (log scale)'"
		echo "set yrange [0:*]"
		echo "set grid"
		echo "set key below"
		if [ "$RR" = 1 ]; then
			echo "set multiplot layout 1,2 title $(gq "$(title)")"
			echo "set title 'latency, p50 and p99'"
			echo "set ylabel 'latency, us'"
			# p99: the same colours as p50, thinner, open triangles
			echo "plot $(plot_lines "$dat" 3 " p50" 7 2), $(plot_lines "$dat" 4 " p99" 8 1)"
			echo "set title 'transactions/s'"
			echo "set ylabel $(gq "$ylabel")"
			echo "plot $(plot_lines "$dat" 2)"
			echo "unset multiplot"
		else
			echo "set title $(gq "$(title)")"
			echo "set ylabel $(gq "$ylabel")"
			echo "plot $(plot_lines "$dat" 2)"
		fi
	} >"$gp"
	"$GNUPLOT" "$gp" 2>"$TMP/plot.err" && [ -s "$out" ] ||
		{ cat "$TMP/plot.err" >&2; echo "netbench: gnuplot failed, no $PLOT written (script: $gp)" >&2; exit 1; }
	mv -f "$out" "$PLOT"
	echo "netbench: plot in $PLOT" >&2
}

json_num() { if [ -n "$1" ]; then echo "$1"; else echo null; fi; }

if [ "$JSON" = 1 ]; then
	printf '{"dir":"%s","proto":"%s","secs":%s,"rounds":%s,"host_ip":"%s","offload":"%s","configs":[' "$DIR" "$PROTO" "$SECS" "$ROUNDS" "$HOST_IP" "${OFFLOAD:-default}"
	for ((c = 0; c < NCFG; c++)); do
		[ $c = 0 ] || printf ','
		printf '"%s"' "${CONFIGS[$c]}"
	done
	printf ']'
	[ "$BREAKDOWN" = 0 ] || printf ',"perf_note":"%s"' "$PERF_NOTE"
	printf ',"results":['
	first=1
	for size in "${SIZE_LIST[@]}"; do
		for ((c = 0; c < NCFG; c++)); do
			[ $first = 1 ] || printf ','
			first=0
			printf '{"config":"%s","message_bytes":%s' "${CONFIGS[$c]}" "${RES[$c,$size,MSZ]:-$size}"
			printf ',"socket_bytes":%s' "$(json_num "${RES[$c,$size,SOCK]}")"
			printf ',"elapsed_s":%s' "$(json_num "${RES[$c,$size,ELAPSED]}")"
			if [ "$RR" = 1 ]; then
				printf ',"tps":%s' "$(json_num "${RES[$c,$size,TPS]}")"
				printf ',"lat_us_p50":%s' "$(json_num "${RES[$c,$size,P50]}")"
				printf ',"lat_us_p90":%s' "$(json_num "${RES[$c,$size,P90]}")"
				printf ',"lat_us_p99":%s' "$(json_num "${RES[$c,$size,P99]}")"
				printf ',"transactions":%s' "$(json_num "${RES[$c,$size,RECV]}")"
			else
				printf ',"mbps":%s' "$(json_num "${RES[$c,$size,MBPS]}")"
				printf ',"pps":%s' "$(json_num "${RES[$c,$size,PPS]}")"
				printf ',"sent_msgs":%s' "$(json_num "${RES[$c,$size,SENT]}")"
				printf ',"recv_msgs":%s' "$(json_num "${RES[$c,$size,RECV]}")"
			fi
			printf ',"vmm_cpu_us_per_pkt":%s' "$(json_num "${RES[$c,$size,CPU]}")"
			if [ -n "${RES[$c,$size,OFFL]}" ]; then printf ',"offload":"%s"' "${RES[$c,$size,OFFL]}"; fi
			if [ -n "${RES[$c,$size,TSO]}" ]; then printf ',"tso_frames":%s' "${RES[$c,$size,TSO]}"; fi
			if [ "$TCP_STREAM" = 1 ]; then
				printf ',"write_bytes":%s,"mss":%s' "$size" "$(json_num "${RES[$c,$size,MSS]}")"
				printf ',"segs":%s' "$(json_num "${RES[$c,$size,SEGS]}")"
				if [ -n "${RES[$c,$size,SMALL]}" ]; then printf ',"small_segs":%s' "${RES[$c,$size,SMALL]}"; fi
			fi
			if [ -n "${RES[$c,$size,AFF]}" ]; then printf ',"affinity":"%s"' "${RES[$c,$size,AFF]}"; fi
			[ "$BREAKDOWN" = 0 ] || printf ',"breakdown":%s' "${RES[$c,$size,BDJ]:-null}"
			if [ "$NCFG" -ge 2 ] && [ $c = 1 ]; then
				printf ',"speedup_pct":%s' "$(json_num "$(speedup "$size")")"
				printf ',"speedup_pct_rounds":[%s]' "$(tr ' ' ',' <<<"${SPEEDS[$size]:-}")"
			fi
			printf '}'
		done
	done
	printf ']}\n'
else
	table | sed 's/ *$//'
	if [ -n "$VCPU_PIN$IO_PIN" ]; then
		echo
		echo "Thread affinity observed per role (vcpu: vCPU threads, io: the I/O thread):"
		for ((c = 0; c < NCFG; c++)); do
			a=$(for size in "${SIZE_LIST[@]}"; do echo "${RES[$c,$size,AFF]:--}"; done | sort -u | paste -sd ';')
			printf '  %-16s %s\n' "${CONFIGS[$c]}" "$a"
		done
	fi
	if [ "$BREAKDOWN" = 1 ]; then
		echo
		echo "Where each packet's time goes (per transaction for rr; method: docs/performance.md):"
		[ -z "$PERF_NOTE" ] || echo "  (--perf skipped: $PERF_NOTE)"
		for size in "${SIZE_LIST[@]}"; do
			for ((c = 0; c < NCFG; c++)); do
				echo "  ${CONFIGS[$c]} $size bytes:"
				f=${RES[$c,$size,BD]}
				if [ -n "$f" ] && [ -s "$f" ]; then cat "$f"; else echo "    (no breakdown)"; fi
			done
		done
	fi
	if [ "$PROFILE" = 1 ]; then
		echo
		echo "Where the VMM's CPU time went (perf, share of the samples of each row's run):"
		for size in "${SIZE_LIST[@]}"; do
			for ((c = 0; c < NCFG; c++)); do
				echo "  ${CONFIGS[$c]} $size bytes:"
				f=${RES[$c,$size,PROF]}
				if [ -n "$f" ] && [ -s "$f" ]; then cat "$f"; else echo "    (no profile)"; fi
			done
		done
	fi
fi
[ -z "$PLOT" ] || plot_svg
[ "$FAILED" = 0 ] || { echo "netbench: some measurements failed (see above)" >&2; exit 1; }
