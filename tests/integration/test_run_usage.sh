#!/usr/bin/env bash
# minivmm run's usage and set-up errors (issue 38): each is one line, "minivmm: error: run: ...",
# status 2, found before any VM exists (so no /dev/kvm is needed), and nothing is left running.
source "$(dirname "$0")/lib.sh"

# A bzImage header that names a version, and modules directories with and without the drivers.
K=$TEST_TMP/bzImage
VER=6.1.0-99-test
python3 - "$K" "$VER" <<'PY'
import sys
img = bytearray(0x400)
img[0x202:0x206] = b"HdrS"
img[0x20e:0x210] = (0x100).to_bytes(2, "little")  # the version string at 0x300
v = (sys.argv[2] + " (test) #1").encode()
img[0x300:0x300 + len(v)] = v
open(sys.argv[1], "wb").write(img)
PY
mkdir -p "$TEST_TMP/nomods" "$TEST_TMP/share"
printf 'kernel/drivers/virtio/virtio_pci.ko:\n' >"$TEST_TMP/nomods/modules.dep"
: >"$TEST_TMP/nomods/modules.builtin"

run_usage() { expect_usage_error "$@"; }
run_usage no-kernel 'run: --kernel is required' run -- true
run_usage no-command 'run: no command to run' run --kernel "$K"
run_usage missing-kernel "run: cannot open '/nonexistent'" run --kernel /nonexistent -- true
run_usage not-a-bzimage "run: .* is not a bzImage" run --kernel "$FW/probe.elf" -- true
run_usage no-modules-dir "run: cannot read /nonexistent/modules.dep" run --kernel "$K" \
	--modules /nonexistent -- true
run_usage default-modules "run: cannot read /lib/modules/$VER/modules.dep" run --kernel "$K" -- true
run_usage drivers-missing "run: the kernel has no virtiofs driver" run --kernel "$K" \
	--modules "$TEST_TMP/nomods" -- true
run_usage missing-share "run: --share: '/nonexistent': no such directory" run --kernel "$K" \
	--share /nonexistent:/mnt -- true
run_usage bad-share "run: --share .*expected HOSTDIR:GUESTDIR" run --kernel "$K" \
	--share "$TEST_TMP/share" -- true
run_usage bad-timeout "run: --timeout 'soon'" run --kernel "$K" --timeout soon -- true
run_usage bad-option "run: unknown option '--frobnicate'" run --kernel "$K" --frobnicate -- true
run_usage bad-root "run: --root '/nonexistent'" run --kernel "$K" --root /nonexistent -- true
run_usage console-stdio "run: --console .stdio.: none or file=PATH" run --kernel "$K" --console stdio -- true
mkdir -p "$TEST_TMP/a,b"
run_usage comma-share "run: --share .*: a host directory with a comma is not supported" run --kernel "$K" --share "$TEST_TMP/a,b:/mnt" -- true
"$MINIVMM" run --help >"$TEST_TMP/help" || fail "run --help failed"
for flag in --kernel --modules --root --share --memory --cpus --net --timeout --console; do
	grep -q -- "$flag" "$TEST_TMP/help" || fail "run --help does not mention $flag"
done
exit 0
