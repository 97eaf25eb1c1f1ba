#!/usr/bin/env bash
# --jail with --seccomp off is refused before anything starts: a chroot alone is escapable by
# code running in it. One line on stderr, exit status 2, whatever the order of the options.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "--jail needs root"
# Sanitizer builds cannot run the filters (off by default there): they jail without them.
grep -aq __asan_init "$MINIVMM" && skip "sanitizer build: no seccomp filters to require"

jail=$TEST_TMP/jail
mkdir -m 755 "$jail"
run_vmm off 20 --kernel "$FW/probe.elf" --jail "$jail,uid=65534,gid=65534" --seccomp off
expect_status off 2
[ "$(wc -l <"$TEST_TMP/off.err")" = 1 ] || { show off; fail "off: not one line"; }
expect_line off err '^minivmm: error: --jail needs the seccomp filters: not with --seccomp off$'
run_vmm off-first 20 --seccomp off --jail "$jail,uid=65534,gid=65534" --kernel "$FW/probe.elf"
expect_status off-first 2
expect_line off-first err '^minivmm: error: --jail needs the seccomp filters'
[ -z "$(ls -A "$jail")" ] || fail "the jail is no longer empty: $(ls -A "$jail")"
exit 0
