# shellcheck shell=bash
# shellcheck disable=SC2034 # FILE_CRC, VIRTIOFSD_SOCK: the sourcing test's
# Debian's virtiofsd for the tests that share a directory (sourced after lib.sh): the probe's
# test=fs under minivmm (test_probe_fs.sh) and under QEMU (test_probe_fs_qemu.sh).

# find_virtiofsd: VIRTIOFSD, else where Debian's qemu-system-common installs it, else PATH;
# skips the test when there is none, or when not root (its chroot sandbox needs it).
find_virtiofsd() {
	VIRTIOFSD=${VIRTIOFSD:-}
	local c
	if [ -z "$VIRTIOFSD" ]; then
		for c in /usr/lib/qemu/virtiofsd /usr/libexec/virtiofsd /usr/lib/virtiofsd; do
			[ -x "$c" ] && { VIRTIOFSD=$c; break; }
		done
	fi
	[ -n "$VIRTIOFSD" ] || VIRTIOFSD=$(command -v virtiofsd) ||
		skip "virtiofsd is not installed (apt-get install qemu-system-common)"
	[ "$(id -u)" = 0 ] || skip "virtiofsd's sandbox needs root"
}

# share_file DIR NAME SIZE: a file of SIZE random bytes; its CRC-32 (gzip's trailer holds the
# zlib CRC-32 of its input) in FILE_CRC.
share_file() {
	mkdir -p "$1"
	head -c "$3" /dev/urandom >"$1/$2"
	FILE_CRC=$(gzip -c "$1/$2" | tail -c8 | od -An -tx4 -N4 | tr -d ' ')
}

# start_virtiofsd NAME DIR: virtiofsd serving DIR (one session, then it exits) on the socket
# $TEST_TMP/NAME.sock, its log in $TEST_TMP/NAME.vfsd; VIRTIOFSD_PID. It is killed at exit,
# and its pid file in /run/virtiofsd (named after the socket) removed, on every path.
start_virtiofsd() {
	local sock=$TEST_TMP/$1.sock
	rm -f "$sock"
	"$VIRTIOFSD" --socket-path="$sock" -o source="$2" -o cache=none -o sandbox=chroot \
		>"$TEST_TMP/$1.vfsd" 2>&1 &
	VIRTIOFSD_PID=$!
	on_exit "kill -9 $VIRTIOFSD_PID 2>/dev/null; rm -f '/run/virtiofsd/$(tr / . <<<"$sock").pid'"
	VIRTIOFSD_SOCK=$sock
}

# wait_socket NAME: until virtiofsd listens (QEMU does not retry a connect); fails if it exits.
wait_socket() {
	for _ in $(seq 100); do
		[ -S "$VIRTIOFSD_SOCK" ] && return 0
		kill -0 "$VIRTIOFSD_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$TEST_TMP/$1.vfsd" >&2
	fail "$1: virtiofsd did not listen on $VIRTIOFSD_SOCK"
}

# virtiofsd_ended NAME: virtiofsd ends with its session (within 5 s of the VMM's end).
virtiofsd_ended() {
	if ! timeout 5 tail -s 0.1 --pid="$VIRTIOFSD_PID" -f /dev/null; then
		fail "$1: virtiofsd outlived the VMM"
	fi
	wait "$VIRTIOFSD_PID" 2>/dev/null || true
}
