#!/usr/bin/env bash
# Bad command lines, bad images and files that cannot be opened: one line on stderr,
# "minivmm: error: <the problem>", and exit status 2.
source "$(dirname "$0")/lib.sh"
need_kvm

ncpu=$(nproc --all)
head -c 4096 /dev/urandom >"$TEST_TMP/garbage"
printf '\177ELF' >"$TEST_TMP/truncated-elf"
: >"$TEST_TMP/empty"

expect_usage_error no-kernel '--kernel PATH is required'
expect_usage_error unknown-flag "unknown option '--frobnicate'" --kernel "$FW/probe.elf" --frobnicate
expect_usage_error missing-value 'needs a value' --kernel
expect_usage_error bad-memory "invalid size" --kernel "$FW/probe.elf" --memory lots
expect_usage_error tiny-memory "out of range" --kernel "$FW/probe.elf" --memory 1M
expect_usage_error bad-cpus "invalid --cpus" --kernel "$FW/probe.elf" --cpus 0
expect_usage_error bad-pin "does not exist" --kernel "$FW/probe.elf" --cpus 1 --pin "0=$ncpu"
expect_usage_error pin-vcpu "vCPU 3" --kernel "$FW/probe.elf" --cpus 2 --pin 3=0
expect_usage_error bad-console "invalid --console" --kernel "$FW/probe.elf" --console tty
expect_usage_error missing-kernel "cannot open kernel '/nonexistent'" --kernel /nonexistent
expect_usage_error dir-kernel "not a regular file" --kernel /tmp
expect_usage_error missing-initrd "cannot open initrd" --kernel "$FW/probe.elf" --initrd /nonexistent
expect_usage_error garbage-kernel "unrecognised kernel image" --kernel "$TEST_TMP/garbage"
expect_usage_error empty-kernel "kernel" --kernel "$TEST_TMP/empty"
expect_usage_error truncated-elf "ELF" --kernel "$TEST_TMP/truncated-elf"
expect_usage_error pvh-on-bzimage "PVH" --kernel "$FW/probe.bzImage" --boot pvh
expect_usage_error dir-initrd "initrd" --kernel "$FW/probe.elf" --initrd /tmp
expect_usage_error bad-console-file "console" --kernel "$FW/probe.elf" \
	--console file=/nonexistent/console.log

# --help lists every flag and exits 0.
"$MINIVMM" --help >"$TEST_TMP/help" || fail "--help failed"
for flag in --kernel --boot --initrd --cmdline --memory --populate --no-populate --cpus --pin --console \
	--seccomp --jail --quiet --help --version; do
	grep -q -- "$flag" "$TEST_TMP/help" || fail "--help does not mention $flag"
done
exit 0
