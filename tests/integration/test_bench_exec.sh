#!/usr/bin/env bash
# examples/bench-exec.sh (no /dev/kvm needed): two binaries side by side, a line each with its
# time per exec and ratio; a binary that is not there is refused. And what it is for: minivmm
# links no libslirp or glib (loaded only for --net user, devices/backends/slirp_lib.c), which
# cost every start ~1.5 ms of exec, and loads none of the libraries it links in.
source "$(dirname "$0")/lib.sh"
[ -x "$MINIVMM" ] || fail "$MINIVMM is not built"

libs=$(ldd "$MINIVMM") || fail "ldd $MINIVMM failed"
! grep -Eq 'libslirp|libglib' <<<"$libs" || fail "minivmm links libslirp or glib at exec: $libs"
# libfdt, liburing and libseccomp are linked in (the Makefile's LDLIBS), not loaded at exec
! grep -Eq 'libfdt|liburing|libseccomp' <<<"$libs" || fail "minivmm loads libraries it could link in: $libs"

out=$(bash "$ROOT/examples/bench-exec.sh" --rounds 2 --execs 3 --bin "$MINIVMM" --bin "$MINIVMM" 2>&1) ||
	fail "bench-exec failed: $out"
[ "$(grep -c ' us per exec  [0-9.]*x  ([0-9]* shared libraries)$' <<<"$out")" = 2 ] ||
	fail "not one line per binary: $out"
grep -q '^bench-exec: .* 2 rounds of 3 execs' <<<"$out" || fail "no header line: $out"
grep -q ' us per exec  1.00x' <<<"$out" || fail "the first binary's ratio is not 1.00x: $out"

rc=0
out=$(bash "$ROOT/examples/bench-exec.sh" --bin "$TEST_TMP/none" 2>&1) || rc=$?
[ $rc = 2 ] && grep -q 'not an executable' <<<"$out" || fail "status $rc for a missing binary: $out"
exit 0
