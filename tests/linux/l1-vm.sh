# The L1 test VM's boot and watch, sourced by tests/linux/run.sh (the nested suite) and
# tests/linux/ab-boot.sh (issue 35's A/B of minivmm and QEMU in the same L1). The caller sets
# QEMU, CPU, OUT (where vmlinuz is), LIMIT, BOOT_LIMIT, HEARTBEAT, SILENCE (run.sh says what each
# means) and L1_PIDFILE; L1_UNIT names what the VM's "@@ " progress lines start and end (default
# "scenario").

# boot_l1 LOG INITRD ARGS: one L1 VM booted with INITRD and ARGS added to its kernel command line
# (tests=a,b: the scenarios to run), its console in LOG. Killed when it has run LIMIT seconds,
# did not beat within BOOT_LIMIT seconds, stopped beating for HEARTBEAT seconds, or printed no
# progress line (one starting "@@ " that is no heartbeat) for SILENCE seconds. Prints why it
# ended, then the largest gap between its heartbeats.
boot_l1() {
	local log=$1 initrd=$2 args=$3 rc=0 seen=0 beats=0 gap=0 n now why=""
	local t0=$SECONDS last=$SECONDS last_beat=$SECONDS
	# -m 6G: the --memory scenario gives the L2 guest more than 3 GiB (RAM across the PCI hole).
	"$QEMU" -accel tcg -cpu "$CPU" -m 6G -smp 2 -nographic -no-reboot \
		-kernel "$OUT/vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 quiet panic=-1 $args" </dev/null >"$log" 2>&1 &
	l1_pid=$!
	echo $l1_pid >"$L1_PIDFILE"
	while kill -0 $l1_pid 2>/dev/null; do
		sleep 0.5
		now=$SECONDS
		# Heartbeats are not progress: a VM stuck in a scenario keeps beating.
		n=$(grep -a '@@ ' "$log" | grep -vac '@@ HEARTBEAT' || true)
		if [ "$n" != "$seen" ]; then
			seen=$n
			last=$now
		fi
		n=$(grep -ac '@@ HEARTBEAT' "$log" || true)
		if [ "$n" != "$beats" ]; then
			[ "$beats" != 0 ] && [ $((now - last_beat)) -gt $gap ] && gap=$((now - last_beat))
			beats=$n
			last_beat=$now
		fi
		if [ "$beats" != 0 ] && [ $((now - last_beat)) -ge "$HEARTBEAT" ]; then
			why="no heartbeat for ${HEARTBEAT}s"
		elif [ "$beats" = 0 ] && [ $((now - t0)) -ge "$BOOT_LIMIT" ]; then
			why="no heartbeat within ${BOOT_LIMIT}s of its start"
		elif [ $((now - last)) -ge "$SILENCE" ]; then
			why="no ${L1_UNIT:-scenario} started or ended for ${SILENCE}s"
		elif [ $((now - t0)) -ge "$LIMIT" ]; then
			why="did not finish within ${LIMIT}s"
		else
			continue
		fi
		kill -KILL $l1_pid 2>/dev/null || true
		wait $l1_pid 2>/dev/null || true
		break
	done
	if [ -z "$why" ]; then
		wait $l1_pid || rc=$?
		if [ $rc != 0 ]; then
			why="QEMU exit status $rc"
		elif grep -aq '@@ DONE' "$log"; then
			why=done
		else
			# An orderly exit unasked for: the VM reset (-no-reboot). Say so with its
			# kernel's panic line when it printed one (the last: the VM's own).
			local panic
			panic=$(grep -a 'Kernel panic - not syncing: ' "$log" | tr -d '\r' | tail -n 1 || true)
			if [ -n "$panic" ]; then
				why="its kernel panicked: ${panic#*Kernel panic - not syncing: }"
			else
				why="QEMU exited without the test VM finishing"
			fi
		fi
	fi
	rm -f "$L1_PIDFILE"
	printf '%s\n%s\n' "$why" "$gap"
}

# log_text LOG: the console as text, without heartbeats. (A heartbeat written while another
# process was halfway through a line sits inside it: that line is joined back.)
log_text() {
	tr -d '\r' <"$1" | sed -e '/@@ HEARTBEAT [0-9]*$/{s///;/^$/d;N;s/\n//;}'
}
