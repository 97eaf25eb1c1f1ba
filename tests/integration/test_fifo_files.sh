#!/usr/bin/env bash
# A FIFO named as a file minivmm opens (--kernel, --initrd, --disk with and without readonly,
# --console file=, --dump-dtb) is refused at once: one "minivmm: error:" line naming the path,
# exit status 2. Opening it used to wait forever for the other end, with SIGTERM, SIGINT and
# SIGHUP already blocked; run_vmm's time limit turns such a hang into a failure.
source "$(dirname "$0")/lib.sh"

# expect_fifo_refused NAME ARGS...: ARGS name $FIFO somewhere.
expect_fifo_refused() {
	local name=$1
	shift
	rm -f "$FIFO"
	mkfifo "$FIFO"
	run_vmm "$name" 5 "$@"
	rm -f "$FIFO"
	expect_status "$name" 2
	expect_line "$name" err "^minivmm: error: .*'$FIFO' is a FIFO"
	[ "$(wc -l <"$TEST_TMP/$name.err")" = 1 ] || { show "$name"; fail "$name: not one line"; }
}

FIFO=$TEST_TMP/fifo
on_exit "rm -f '$FIFO'"
KERNEL=$FW/probe.elf

# --disk is opened while the command line is parsed; the others once the VM exists.
expect_fifo_refused disk-readonly --kernel "$KERNEL" --disk "path=$FIFO,readonly=on"
expect_fifo_refused disk-readwrite --kernel "$KERNEL" --disk "path=$FIFO"
# The rest are opened after /dev/kvm: a host without one fails before reaching them.
kvm_usable || skip "the --disk cases passed; kernel, initrd, console and dump-dtb need a usable /dev/kvm"
expect_fifo_refused kernel --kernel "$FIFO"
expect_fifo_refused initrd --kernel "$KERNEL" --initrd "$FIFO"
expect_fifo_refused console-file --kernel "$KERNEL" --console "file=$FIFO"
expect_fifo_refused dump-dtb --kernel "$KERNEL" --dump-dtb "$FIFO"
exit 0
