#!/usr/bin/env bash
# --api-sock and `minivmm ctl`: every command, malformed and hostile input (bad JSON, unknown
# commands, a client that leaves mid-request, an over-long line), clients one after another
# and at once, a refused second VMM on a live socket, a stale socket replaced, and the socket
# file removed at exit. Hostile clients: the socket is mode 0600 and other users are refused;
# a flooding, never-reading, half-closed client costs no CPU; idle clients holding every slot
# are evicted and time out; running out of descriptors refuses clients without a spin or a
# log flood. The guest is the probe holding on its serial port.
source "$(dirname "$0")/lib.sh"
need_kvm
command -v socat >/dev/null || skip "socat is not installed (make deps)"

sock=$TEST_TMP/vm.sock
ctl() { "$MINIVMM" ctl --sock "$sock" "$@"; }
# raw TEXT: send TEXT as-is on one connection and print what comes back.
raw() { printf '%b' "$1" | timeout 10 socat -t 2 - "UNIX-CONNECT:$sock"; }

run_vmm_bg --fifo vm --kernel "$FW/probe.elf" --cpus 2 --rng,transport=mmio --api-sock "$sock" \
	--cmdline "test=boot expect.cpus=2 hold=serial"
pid=$VMM_PID
wait_line vm out '^probe: holding'
[ -S "$sock" ] || fail "no socket at $sock"

# status: vCPUs with their thread ids (as logged at start) and exits, the I/O thread, the devices.
out=$(ctl status) || fail "status failed: $out"
tid0=$(sed -n 's/^minivmm: vcpu 0: tid \([0-9]*\),.*/\1/p' "$TEST_TMP/vm.err")
tid1=$(sed -n 's/^minivmm: vcpu 1: tid \([0-9]*\),.*/\1/p' "$TEST_TMP/vm.err")
iotid=$(io_tid vm)
grep -q '"ok":true' <<<"$out" || fail "status: $out"
grep -q "{\"index\":1,\"tid\":$tid1,\"cpus\":\"[0-9,-]*\",\"pinned\":false,\"state\":\"running\",\"exits\":{\"io\":[0-9]*,\"mmio\":[0-9]*,\"hlt\":[0-9]*,\"other\":[0-9]*}}" \
	<<<"$out" || fail "status lacks vCPU 1 (tid $tid1): $out"
# vCPU 0 printed the probe's banner on the serial port: port I/O exits, counted.
grep -q "{\"index\":0,\"tid\":$tid0,[^}]*\"exits\":{\"io\":[1-9]" <<<"$out" ||
	fail "status: no port I/O exits on vCPU 0: $out"
grep -q "\"io_thread\":{\"tid\":$iotid," <<<"$out" || fail "status lacks the I/O thread: $out"
grep -q '"label":"virtio-rng0","transport":"mmio","kicks":0,' <<<"$out" ||
	fail "status lacks the rng device: $out"
grep -q '"needs_reset":false' <<<"$out" || fail "status lacks needs_reset: $out"

# Every VMM thread runs under the seccomp allow-list (mode 2), or none where the build says so.
# The main, I/O and vCPU threads each add a filter of their own to the process-wide one.
if grep -q '^minivmm: seccomp: system-call allow-lists installed' "$TEST_TMP/vm.err"; then
	want=2
else
	expect_line vm err '^minivmm: seccomp: off \(sanitizer build\)'
	want=0
fi
for st in /proc/$pid/task/*/status; do
	grep -q "^Seccomp:[[:space:]]*$want\$" "$st" || fail "$st: Seccomp is not $want: $(grep Seccomp "$st")"
done
if [ $want = 2 ] && grep -q '^Seccomp_filters:' "/proc/$pid/status"; then
	for t in "$pid main" "$iotid io" "$tid0 vcpu0" "$tid1 vcpu1"; do
		read -r tid name <<<"$t"
		grep -q '^Seccomp_filters:[[:space:]]*2$' "/proc/$pid/task/$tid/status" ||
			fail "$name thread has not narrowed its filter: $(grep Seccomp_filters \
				"/proc/$pid/task/$tid/status")"
	done
fi
[ "$(ls /proc/$pid/task | wc -l)" -ge 4 ] || fail "expected vCPU, I/O and console threads"
# Threads carry their role as their name (top -H, perf): the tids status reported.
for t in "$tid0 vcpu0" "$tid1 vcpu1" "$iotid io"; do
	read -r tid name <<<"$t"
	[ "$(cat "/proc/$pid/task/$tid/comm")" = "$name" ] ||
		fail "thread $tid is named '$(cat "/proc/$pid/task/$tid/comm")', not $name"
done

# pause / resume: status shows the vCPUs parked, then running again.
out=$(ctl pause) || fail "pause failed: $out"
grep -q '"paused_vcpus":2' <<<"$out" || fail "pause: $out"
out=$(ctl status)
[ "$(grep -o '"state":"paused"' <<<"$out" | wc -l)" -ge 3 ] || fail "not paused: $out"
out=$(ctl resume) || fail "resume failed: $out"
out=$(ctl status)
grep -q '"state":"paused"' <<<"$out" && fail "still paused after resume: $out"

# Errors: ok:false and exit 1; usage errors and no VMM: exit 2.
rc=0; out=$(ctl balloon-set 64) || rc=$?
[ $rc = 1 ] && grep -q '"ok":false,"error":"no balloon device' <<<"$out" ||
	fail "balloon-set without a balloon: rc $rc, $out"
rc=0; ctl frobnicate 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "unknown ctl command: exit $rc, expected 2"
rc=0; "$MINIVMM" ctl status 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "ctl without --sock: exit $rc, expected 2"
rc=0; "$MINIVMM" ctl --sock "$TEST_TMP/nothing.sock" status 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "ctl to no VMM: exit $rc, expected 2"

# Hostile input on one connection: each bad line gets an error, the connection goes on.
out=$(raw '{bad json}\n{"cmd":"nope"}\n[1,2]\n{"cmd":"status","mib":{}}\n\xff\xfe\n{"cmd":"status"}\n')
[ "$(grep -c '"ok":false' <<<"$out")" = 5 ] || fail "malformed input: $out"
grep -q 'unknown command \\"nope\\"' <<<"$out" || fail "no unknown-command error: $out"
grep -q '"error":"malformed request: ' <<<"$out" || fail "no malformed-request error: $out"
[ "$(tail -n1 <<<"$out" | grep -c '"ok":true')" = 1 ] || fail "no answer after bad lines: $out"

# Half a request, then the client leaves; an over-long line is refused and closed.
raw '{"cmd":"sta' >/dev/null
# From a file, so that socat sends the line in one write: in two (a pipe's 4096-byte pieces),
# the second could come after the VMM closed the connection, and socat, failing it (EPIPE),
# would leave without reading the answer.
head -c 5000 /dev/zero | tr '\0' 'x' >"$TEST_TMP/long.line"
out=$(timeout 10 socat -t 2 - "UNIX-CONNECT:$sock" <"$TEST_TMP/long.line")
grep -q 'longer than 4096 bytes' <<<"$out" || fail "over-long line: $out"
ctl status >/dev/null || fail "the VMM stopped serving after hostile clients"

# Clients one after another, then several at once.
for i in $(seq 5); do ctl status >/dev/null || fail "sequential client $i"; done
pids=()
for i in $(seq 6); do (ctl status >"$TEST_TMP/c$i.out") & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent client failed"; done
for i in $(seq 6); do grep -q '"ok":true' "$TEST_TMP/c$i.out" || fail "concurrent client $i"; done

# The socket file is the owner's only, and a peer of another user is refused even when the
# file lets it connect (SO_PEERCRED).
[ "$(stat -c %a "$sock")" = 600 ] || fail "socket mode $(stat -c %a "$sock"), expected 600"
chmod 666 "$sock"
chmod 711 "$TEST_TMP"
out=$(printf '{"cmd":"status"}\n' | timeout 10 setpriv --reuid=65534 --regid=65534 \
	--clear-groups socat -t 2 - "UNIX-CONNECT:$sock" 2>&1)
chmod 700 "$TEST_TMP"
chmod 600 "$sock"
grep -q '"ok":true' <<<"$out" && fail "a client of uid 65534 was served: $out"
wait_line vm err 'control socket: refused a client running as uid 65534'

# wait_for SECONDS CMD...: poll until CMD succeeds; 1 if it does not within SECONDS.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.05
	done
}
sockets() { find /proc/$pid/fd -lname 'socket:*' 2>/dev/null | wc -l; }
sockets_are() { [ "$(sockets)" = "$1" ]; }
base=$(sockets)

# A client that floods requests, never reads and half-closes: its replies cannot be written.
# The I/O thread sleeps meanwhile (no spin) and other clients are served.
cc -O2 -o "$TEST_TMP/ctl_flood" "$ROOT/tests/integration/ctl_flood.c" ||
	fail "cannot build ctl_flood"
"$TEST_TMP/ctl_flood" "$sock" 2000 >"$TEST_TMP/flood.out" 2>&1 &
flood=$!
on_exit "kill $flood 2>/dev/null"
flooded() { grep -q flooded "$TEST_TMP/flood.out"; }
wait_for 10 flooded || fail "the flooding client did not finish sending: $(cat "$TEST_TMP/flood.out")"
t0=$(thread_ticks $pid "$iotid")
sleep 2 # the interval the I/O thread's CPU time is measured over
t1=$(thread_ticks $pid "$iotid")
[ $((t1 - t0)) -le 20 ] || fail "I/O thread used $((t1 - t0)) ticks in 2 s with a half-closed flooder"
out=$(timeout 1 "$MINIVMM" ctl --sock "$sock" status) || fail "no answer within 1 s beside the flooder"
kill $flood
wait $flood 2>/dev/null
wait_for 10 sockets_are "$base" || fail "the flooder's connection was not closed ($(sockets) sockets)"

# Every slot held by an idle client: a newcomer is served (the longest idle one is dropped),
# and idle clients time out.
idle=()
for i in $(seq 16); do
	socat -u "UNIX-CONNECT:$sock" /dev/null &
	idle+=($!)
	on_exit "kill ${idle[-1]} 2>/dev/null"
	wait_for 10 sockets_are $((base + i)) || fail "idle client $i was not accepted"
done
out=$(timeout 2 "$MINIVMM" ctl --sock "$sock" status) || fail "16 idle clients lock out: $out"
wait_line vm err 'control socket: 16 clients connected; dropping the longest idle'
first_gone() { ! kill -0 "${idle[0]}" 2>/dev/null; }
wait_for 5 first_gone || fail "the longest-idle client was not the one dropped"
alive() { local n=0; for p in "${idle[@]}"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done; echo $n; }
none_alive() { [ "$(alive)" = 0 ]; }
wait_for 15 none_alive || fail "$(alive) idle clients still connected after 15 s"
for p in "${idle[@]}"; do wait "$p" 2>/dev/null; done

# Out of file descriptors: connections are refused without a spin or a log flood, and the
# socket serves again once descriptors are free.
limit=$(prlimit --pid $pid --nofile --raw --noheadings -o SOFT):
# The lowest limit that leaves two descriptor numbers free (room for two clients).
nofile=0 free=0
while [ $free -lt 2 ]; do
	[ -e /proc/$pid/fd/$nofile ] || free=$((free + 1))
	nofile=$((nofile + 1))
done
prlimit --pid $pid --nofile=$nofile: || fail "prlimit failed"
on_exit "prlimit --pid $pid --nofile=$limit 2>/dev/null"
extra=()
for i in $(seq 30); do
	socat -u "UNIX-CONNECT:$sock" /dev/null &
	extra+=($!)
	on_exit "kill ${extra[-1]} 2>/dev/null"
done
extra_alive() { for p in "${extra[@]}"; do kill -0 "$p" 2>/dev/null && echo; done | wc -l; }
# Every client still there is one the VMM holds; the others were told no and left.
only_held_alive() { [ "$(extra_alive)" = $(($(sockets) - base)) ]; }
wait_for 10 only_held_alive || fail "$(extra_alive) clients alive, $(($(sockets) - base)) held"
[ "$(extra_alive)" -lt 30 ] || fail "no client was refused"
n=$(grep -c 'control socket: accept: ' "$TEST_TMP/vm.err")
[ "$n" -ge 1 ] && [ "$n" -le 12 ] || fail "$n accept warnings (expected 1 to 12)"
for p in "${extra[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
wait_for 10 sockets_are "$base" || fail "connections left after the clients went ($(sockets))"
out=$(timeout 2 "$MINIVMM" ctl --sock "$sock" status) || fail "no service after EMFILE: $out"
prlimit --pid $pid --nofile=$limit

# A second VMM on the live socket is refused (set-up error, exit 2) and leaves it alone.
run_vmm second 20 --kernel "$FW/probe.elf" --api-sock "$sock" --cmdline "test=boot"
expect_status second 2
expect_line second err 'another process .*listening'
ctl status >/dev/null || fail "the first VMM lost its socket"

# shutdown, of a paused VM: exit status 0, the socket file is gone.
ctl pause >/dev/null || fail "second pause failed"
out=$(ctl shutdown) || fail "shutdown failed: $out"
wait_vmm vm 20
expect_status vm 0
[ -e "$sock" ] && fail "socket file left behind after exit (line $LINENO)"

# A stale socket (its VMM was killed) is replaced at start. (That VMM runs with --seccomp off:
# no thread of it is filtered.)
"$MINIVMM" --kernel "$FW/probe.elf" --api-sock "$sock" --console none --seccomp off \
	--cmdline "test=boot hold=serial" </dev/null 2>"$TEST_TMP/killed.err" &
kpid=$!
on_exit "kill -9 $kpid 2>/dev/null"
for _ in $(seq 100); do [ -S "$sock" ] && grep -q 'seccomp: off' "$TEST_TMP/killed.err" && break; sleep 0.1; done
for st in /proc/$kpid/task/*/status; do
	grep -q "^Seccomp:[[:space:]]*0$" "$st" || fail "--seccomp off: $st is filtered"
done
kill -9 $kpid
wait $kpid 2>/dev/null
[ -S "$sock" ] || fail "no stale socket to test with"
run_vmm stale 30 --kernel "$FW/probe.elf" --api-sock "$sock" --cmdline "test=boot"
expect_probe_pass stale
expect_line stale err 'replacing stale'
[ -e "$sock" ] && fail "socket file left behind after exit (line $LINENO)"
exit 0
