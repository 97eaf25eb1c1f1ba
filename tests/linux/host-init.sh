#!/bin/busybox sh
# The nested suite's L1 test VM: PID 1 under QEMU TCG (which emulates AMD SVM). Loads KVM, then
# runs the scenarios named on its command line (tests=a,b,... ; all when absent) from
# /scenarios.sh, one result line each ("@@ RESULT name PASS|FAIL|SKIP seconds"), then powers off.
# In the A/B image (/ab-l1.sh) it runs the boots its command line asks for instead.
/bin/busybox --install -s /bin 2>/dev/null
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /tmp /dev/net
mount -t devpts devpts /dev/pts
mount -t tmpfs -o size=3g tmp /tmp
ip link set lo up
# A heartbeat on the console until the scenarios are done: run.sh ends a test VM that stops
# beating (the emulator's fault) at once, not after a scenario's whole time limit. One echo is
# one write, so a heartbeat never splits another line (it may sit inside one written in parts).
(
	n=0
	while :; do
		n=$((n + 1))
		echo "@@ HEARTBEAT $n"
		sleep 2
	done
) &
beat=$!
for m in $(cat /modules/order); do
	insmod "/modules/$m.ko" || echo "@@ insmod $m failed"
done
[ -e /dev/kvm ] || echo "@@ no /dev/kvm in the test VM"
. /scenarios.sh
if [ -f /ab-l1.sh ]; then
	# The A/B image (build-images.sh --ab, tests/linux/ab-boot.sh): boots, not scenarios.
	. /ab-l1.sh
	ab_run
else
	run_all "$(tr ' ' '\n' </proc/cmdline | sed -n 's/^tests=//p')"
fi
kill $beat
wait $beat
echo "@@ DONE"
poweroff -f
