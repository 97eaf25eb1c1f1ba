#!/usr/bin/env bash
# --jail: the probe's demo (disk, rng, ping over user-mode networking) with a balloon and a
# control socket, run by a VMM chrooted into an empty directory as uid/gid 65534; its root,
# its ids and its control socket are checked while the guest holds, and the socket's removal
# at exit (by the helper process started before the jail: the socket's directory is root's,
# and the jailed VMM keeps no descriptor of it).
source "$(dirname "$0")/lib.sh"
need_kvm
[ "$(id -u)" = 0 ] || skip "--jail needs root"

jail=$TEST_TMP/jail
mkdir -m 755 "$jail"
# A jail with something in it is refused before anything starts.
touch "$jail/planted"
run_vmm not-empty 20 --kernel "$FW/probe.elf" --jail "$jail,uid=65534,gid=65534"
expect_status not-empty 2
expect_line not-empty err "--jail $jail: not empty"
rm "$jail/planted"

sockdir=$TEST_TMP/run
mkdir -m 700 "$sockdir"
sock=$sockdir/vm.sock
disk=$TEST_TMP/disk.img
truncate -s 16M "$disk"
# LeakSanitizer (sanitizer builds) reads /proc/PID/task at exit, which the jail lacks; the same
# run unjailed (test_sandbox.sh) keeps the leak check.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	run_vmm_bg --fifo vm --kernel "$FW/probe.bzImage" --cpus 2 --memory 256M --populate \
	--net user,transport=mmio --disk "path=$disk" --rng --balloon --api-sock "$sock" \
	--jail "$jail,uid=65534,gid=65534" --cmdline "test=demo hold=serial"
pid=$VMM_PID
wait_line vm out '^probe: holding' 600
expect_line vm out '^probe: demo summary: .* 4/4 pings answered'
expect_line vm err "^minivmm: jail: chroot $jail, uid 65534, gid 65534"

[ "$(readlink "/proc/$pid/root")" = "$jail" ] ||
	fail "root is $(readlink "/proc/$pid/root"), not $jail"
# Each thread's status read once; a thread that ended after the listing (the pre-faulting one,
# a blk worker) is skipped. The main thread lives as long as the process: at least it is read.
checked=0
for st in /proc/$pid/task/*/status; do
	s=$(cat "$st" 2>/dev/null) || continue
	[ -n "$s" ] || continue
	grep -Eq '^Uid:\s+65534\s+65534\s+65534\s+65534$' <<<"$s" || fail "$st: $(grep Uid: <<<"$s")"
	grep -Eq '^Gid:\s+65534\s+65534\s+65534\s+65534$' <<<"$s" || fail "$st: $(grep Gid: <<<"$s")"
	grep -Eq '^Groups:\s*$' <<<"$s" || fail "$st: $(grep Groups: <<<"$s")"
	grep -Eq '^CapEff:\s+0+$' <<<"$s" || fail "$st: $(grep CapEff: <<<"$s")"
	checked=$((checked + 1))
done
[ -r "/proc/$pid/task/$pid/status" ] && [ "$checked" -ge 1 ] || fail "no thread's status read"
# No descriptor of a directory (any would lead outside the jail): nothing to fchdir or stat
# through.
for fd in /proc/$pid/fd/*; do
	[ -d "$fd" ] && fail "descriptor ${fd##*/} is a directory: $(readlink "$fd")"
done
out=$("$MINIVMM" ctl --sock "$sock" status) || fail "status through the jailed socket: $out"
grep -q '"ok":true' <<<"$out" || fail "status: $out"

printf x >&3 # release the hold
wait_vmm vm 20
expect_probe_pass vm
[ ! -e "$sock" ] || fail "the control socket was left behind"
[ -z "$(ls -A "$jail")" ] || fail "the jail is no longer empty: $(ls -A "$jail")"
