#!/usr/bin/env bash
# The start-up floor (examples/bench-boot.sh --startup): the four-instruction PVH guest
# (examples/tiny-guest.S) boots under QEMU microvm, minivmm and examples/startup-floor, whose
# embedded copy of it matches; minivmm --timing and the floor report every start-up step with
# non-negative times that add up to their total. No timing thresholds: a correctness test.
source "$(dirname "$0")/lib.sh"
command -v gcc >/dev/null || skip "gcc is not installed"

TINY=$TEST_TMP/tiny-guest.elf
FLOOR=$TEST_TMP/startup-floor
FIRST_BYTE=$TEST_TMP/first-byte
gcc -nostdlib -static -no-pie -Wl,-T,"$ROOT/examples/tiny-guest.ld" -Wl,--build-id=none \
	-Wl,-z,noexecstack -o "$TINY" "$ROOT/examples/tiny-guest.S" || fail "cannot build the tiny guest"
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$FLOOR" "$ROOT/examples/startup-floor.c" ||
	fail "cannot build startup-floor"
gcc -O2 -Wall -Wextra -Werror -o "$FIRST_BYTE" "$ROOT/examples/first-byte.c" ||
	fail "cannot build first-byte"

# The floor runs the same code as the guest minivmm and QEMU load.
objcopy -O binary --only-section=.text "$TINY" "$TEST_TMP/tiny.text"
"$FLOOR" --code >"$TEST_TMP/floor.code"
cmp -s "$TEST_TMP/tiny.text" "$TEST_TMP/floor.code" ||
	fail "startup-floor's embedded guest differs from examples/tiny-guest.S"
[ "$(stat -c %s "$TEST_TMP/floor.code")" -ge 9 ] || fail "the embedded guest is too short"

# QEMU's PVH loader takes the ELF (the PVH note) and runs it (TCG: no /dev/kvm needed).
if command -v qemu-system-x86_64 >/dev/null; then
	status=0
	timeout --signal=KILL 60 qemu-system-x86_64 -accel tcg \
		-M microvm,x-option-roms=off,pit=off,pic=off,rtc=off,isa-serial=on -m 64M -nodefaults \
		-no-user-config -nographic -serial stdio -kernel "$TINY" -append "" \
		-device isa-debug-exit,iobase=0xf4 </dev/null >"$TEST_TMP/qemu.out" \
		2>"$TEST_TMP/qemu.err" || status=$?
	# isa-debug-exit: (0x21 << 1) | 1
	[ "$status" = 67 ] || { show qemu; fail "qemu: exit status $status, expected 67"; }
	[ "$(cat "$TEST_TMP/qemu.out")" = "!" ] || { show qemu; fail "qemu: console is not '!'"; }
else
	echo "note: qemu-system-x86_64 is not installed: the QEMU boot of the tiny guest is skipped"
fi

kvm_usable || skip "no usable /dev/kvm: only the build, code and QEMU TCG checks ran (passed)"

# check_timing NAME FROM STEP...: $TEST_TMP/NAME.err has exactly one "startup-us:" line with
# each STEP (and no other) as a non-negative U.UUU, exec as that or "-" when FROM is main,
# and the steps add up to total exactly (nanoseconds); from=FROM, first_byte=yes.
check_timing() {
	local name=$1 from=$2 step v ns sum=0 total
	shift 2
	local n
	n=$(grep -c 'startup-us: ' "$TEST_TMP/$name.err" || true)
	[ "$n" = 1 ] || { show "$name"; fail "$name: $n startup-us lines, expected 1"; }
	local line
	line=$(grep 'startup-us: ' "$TEST_TMP/$name.err")
	line=${line#*startup-us: }
	local want="$* total from first_byte" got
	got=$(tr ' ' '\n' <<<"$line" | sed 's/=.*//' | tr '\n' ' ')
	[ "$got" = "$want " ] || fail "$name: fields '$got', expected '$want '"
	for step in "$@" total; do
		v=$(tr ' ' '\n' <<<"$line" | sed -n "s/^$step=//p")
		if [ "$step" = exec ] && [ "$from" = main ]; then
			[ "$v" = - ] || fail "$name: exec=$v without a launcher timestamp"
			continue
		fi
		[[ "$v" =~ ^[0-9]+\.[0-9]{3}$ ]] || fail "$name: $step=$v is not a non-negative U.UUU"
		ns=$((10#${v/./}))
		if [ "$step" = total ]; then
			total=$ns
		else
			sum=$((sum + ns))
		fi
	done
	[ "$sum" = "$total" ] || fail "$name: steps add up to $sum ns, total is $total ns: $line"
	[ "$total" -gt 0 ] || fail "$name: total is 0"
	[[ "$line" == *" from=$from first_byte=yes" ]] || fail "$name: expected from=$from: $line"
}

MINIVMM_STEPS=(exec args kvm memory devices load tables vcpus other seccomp threads guest)
FLOOR_STEPS=(exec kvm memory vcpus guest)

# The floor: the byte on stdout, the guest's exit value as its status.
status=0
"$FLOOR" </dev/null >"$TEST_TMP/floor.out" 2>"$TEST_TMP/floor.err" || status=$?
[ "$status" = 33 ] || { show floor; fail "floor: exit status $status, expected 33"; }
[ "$(cat "$TEST_TMP/floor.out")" = "!" ] || { show floor; fail "floor: console is not '!'"; }
check_timing floor main "${FLOOR_STEPS[@]}"
# The same with minivmm's guest RAM and KVM's set-up for Linux (bench-boot's kvmfloor column).
status=0
"$FLOOR" --memory 64 --linux-kvm </dev/null >"$TEST_TMP/kvmfloor.out" 2>"$TEST_TMP/kvmfloor.err" ||
	status=$?
[ "$status" = 33 ] || { show kvmfloor; fail "kvmfloor: exit status $status, expected 33"; }
[ "$(cat "$TEST_TMP/kvmfloor.out")" = "!" ] || { show kvmfloor; fail "kvmfloor: console is not '!'"; }
check_timing kvmfloor main "${FLOOR_STEPS[@]}"
for bad in 1 0x40 65537 ''; do
	status=0
	"$FLOOR" --memory "$bad" </dev/null >/dev/null 2>"$TEST_TMP/floorbad.err" || status=$?
	[ "$status" = 2 ] && grep -q -- '--memory takes MiB' "$TEST_TMP/floorbad.err" ||
		fail "floor: --memory '$bad' gave status $status: $(cat "$TEST_TMP/floorbad.err")"
done

# minivmm boots it (PVH) and, with --timing, accounts for every step.
run_vmm tiny 30 --kernel "$TINY" --memory 64M --quiet --timing
expect_status tiny 33
[ "$(cat "$TEST_TMP/tiny.out")" = "!" ] || { show tiny; fail "tiny: console is not '!'"; }
check_timing tiny main "${MINIVMM_STEPS[@]}"

# Other paths through the chain: two vCPUs (only the boot vCPU's start is on it), no filters.
run_vmm tiny-2cpu 30 --kernel "$TINY" --memory 64M --cpus 2 --seccomp off --timing
expect_status tiny-2cpu 33
check_timing tiny-2cpu main "${MINIVMM_STEPS[@]}"
expect_line tiny-2cpu err '^minivmm: loaded .* as PVH ELF'

# Without --timing: no report.
run_vmm tiny-quiet 30 --kernel "$TINY" --memory 64M --quiet
expect_status tiny-quiet 33
[ "$(count_lines tiny-quiet err 'startup-us')" = 0 ] || fail "a report without --timing"

# Launched as the benchmark does: the launcher's timestamp (MINIVMM_T0_NS) starts the total.
for name in floor tiny; do
	if [ "$name" = floor ]; then cmd=("$FLOOR"); else
		cmd=("$MINIVMM" --kernel "$TINY" --memory 64M --quiet --timing)
	fi
	timeout --signal=KILL 60 "$FIRST_BYTE" --timeout 30 --out "$TEST_TMP/$name-fb.out" \
		--err "$TEST_TMP/$name-fb.err" -- "${cmd[@]}" >"$TEST_TMP/$name-fb.line" ||
		fail "$name: first-byte failed: $(cat "$TEST_TMP/$name-fb.line")"
	grep -Eq '^first_byte_us=[0-9]+ exit=33 ' "$TEST_TMP/$name-fb.line" ||
		fail "$name: first-byte: $(cat "$TEST_TMP/$name-fb.line")"
	if [ "$name" = floor ]; then
		check_timing floor-fb exec "${FLOOR_STEPS[@]}"
	else
		check_timing tiny-fb exec "${MINIVMM_STEPS[@]}"
	fi
done
exit 0
