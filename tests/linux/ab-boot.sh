#!/usr/bin/env bash
# minivmm against QEMU in the same L1 (issue 35): is a silent or triple-faulting L2 guest in the
# nested suite ours or the emulator's? Boots the nested suite's L1 test VM (QEMU TCG emulating
# AMD SVM, as tests/linux/run.sh does) from the A/B image (build-images.sh --ab: the suite's
# image plus QEMU), and in it the same L2 guest again and again, alternating minivmm and QEMU
# -accel kvm: the same kernel, initramfs and command line (or the probe), 256 MiB, the same vCPUs
# (tests/linux/ab-l1.sh runs the boots). Counts per VMM and vCPU count the boots that were ok,
# silent (no console byte within --first seconds), triple faults, kernel panics, hung (printed
# but not ended within --limit seconds) and other deaths, with the rate per 100 boots and its
# 95% Wilson score interval, and the median time to the first console byte.
#
#   tests/linux/ab-boot.sh [--boots N] [--cpus "1 2 4"] [--probe] [--first SECONDS]
#                          [--limit SECONDS] [--machine MACHINE] [--l1-deaths N]
#   tests/linux/ab-boot.sh --table BOOTS [L1DEATHS]     (the table of an earlier run's files)
#
# --boots N rounds (default 10): each round boots every vCPU count of --cpus (default 2) once
# under each VMM, minivmm first in even rounds and QEMU first in odd ones. --probe: the probe
# (build/firmware/probe.elf, test=boot) as L2 instead of Linux. --machine: QEMU's -M (default
# microvm: hardware-reduced ACPI, in-kernel LAPIC/IOAPIC/PIC/PIT, COM1 and the RTC, the closest
# QEMU has to minivmm's machine; microvm,pcie=on adds a PCI host bridge (ECAM only); pc or q35:
# SeaBIOS and a PC's devices). Under microvm, with or without pcie=on, Linux prints "PCI: Fatal:
# No config space access function found" (no ports 0xcf8/0xcfc) a second into its boot, while
# under minivmm its first byte is its init's marker: compare the two on "not ok", not on
# "silent" alone (a QEMU guest stuck later in its boot is hung, not silent).
# The test VM's own deaths (the heartbeat of run.sh's watch, tests/linux/l1-vm.sh) are no L2
# outcome: a fresh test VM goes on from the boot the dead one was in, and the deaths are counted
# apart, with the VMM that was running; after --l1-deaths of them (default 5), or two test VMs in
# a row that ran no boot, the run stops with what it has.
# Logs: build/linux/ab/l1.K.log (test VM K's console), boots.txt (one line per boot),
# l1-deaths.txt; the table is printed and written to build/linux/ab/summary.txt.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${LINUX_TEST_OUT:-$ROOT/build/linux}
AB=$OUT/ab
# As in run.sh (which says what each means); LINUX_TEST_QEMU and LINUX_TEST_BUILD_IMAGES are
# the harness test's stand-ins (tests/integration/test_ab_harness.sh).
CPU=${LINUX_TEST_CPU:-max}
HEARTBEAT=${LINUX_TEST_HEARTBEAT_LIMIT:-30}
BOOT_LIMIT=${LINUX_TEST_BOOT_LIMIT:-120}
QEMU=${LINUX_TEST_QEMU:-qemu-system-x86_64}
BUILD_IMAGES=${LINUX_TEST_BUILD_IMAGES:-$ROOT/tests/linux/build-images.sh}

usage() {
	sed -n 's/^#   //p' "$0" >&2
	exit 2
}
die() { echo "ab-boot: $*" >&2; exit 2; }

boots=10 cpus="2" guest=linux first=60 limit="" machine=microvm max_deaths=5 table=()
while [ $# -gt 0 ]; do
	case $1 in
	--boots) boots=${2:-}; shift 2 ;;
	--cpus) cpus=${2:-}; shift 2 ;;
	--probe) guest=probe; shift ;;
	--first) first=${2:-}; shift 2 ;;
	--limit) limit=${2:-}; shift 2 ;;
	--machine) machine=${2:-}; shift 2 ;;
	--l1-deaths) max_deaths=${2:-}; shift 2 ;;
	--table) shift; table=("$@"); [ ${#table[@]} -ge 1 ] || usage; break ;;
	*) usage ;;
	esac
done
cpus=${cpus//,/ }
read -r -a cpu_list <<<"$cpus"
[ ${#cpu_list[@]} -gt 0 ] || die "--cpus: no vCPU count"
for c in "${cpu_list[@]}"; do [[ "$c" =~ ^[1-9][0-9]*$ ]] || die "--cpus: '$c' is no vCPU count"; done
# Linux takes 20-60 s to its marker in the emulated test VM; the probe a few.
[ -n "$limit" ] || { [ $guest = probe ] && limit=60 || limit=240; }
for v in "$boots" "$first" "$limit" "$max_deaths"; do
	[[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || die "'$v' is not a positive integer"
done
[[ "$machine" =~ ^(microvm|pc|q35)(,[a-z0-9=_-]+)*$ ]] || die "--machine: microvm, pc or q35, with options (microvm,pcie=on)"

# ab_table BOOTS [L1DEATHS]: the table, from boots.txt's lines
#   I VMM CPUS OUTCOME first_ms=F marker_ms=M wall_ms=W exit=S l1=K
ab_table() {
	local boots_file=$1 deaths_file=${2:-/dev/null} order="" c v
	for c in "${cpu_list[@]}"; do order="$order minivmm,$c qemu,$c"; done
	awk -v order="$order" -v z=1.96 '
	# The rate per 100 with its 95% Wilson score interval.
	function wilson(x, n,   p, d, c, h, lo, hi) {
		if (n == 0) return "-"
		p = x / n
		d = 1 + z * z / n
		c = (p + z * z / (2 * n)) / d
		h = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
		lo = c - h < 0 ? 0 : c - h
		hi = c + h > 1 ? 1 : c + h
		return sprintf("%.1f [%.1f-%.1f]", 100 * p, 100 * lo, 100 * hi)
	}
	function median(list,   a, n, i, j, t) {
		n = split(list, a, " ")
		if (n == 0) return "-"
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return sprintf("%.1fs", (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) / 1000)
	}
	function val(f) { sub(/^[a-z_]*=/, "", f); return f }
	FILENAME == ARGV[1] {
		k = $2 "," $3
		if (!(k in n)) { keys[++nk] = k }
		n[k]++
		o[k, $4]++
		if (val($5) >= 0) fb[k] = fb[k] " " val($5)
		wall[k] = wall[k] " " val($7)
		next
	}
	FILENAME == ARGV[2] && NF { deaths++; d = $0; sub(/.* during [0-9]+ /, "", d); sub(/ .*/, "", d); dv[d]++ }
	END {
		printf "%-7s | %5s | %5s | %3s | %6s | %6s | %5s | %4s | %4s | %-18s | %-18s | %-18s | %9s | %6s\n",
			"VMM", "vCPUs", "boots", "ok", "silent", "triple", "panic", "hung", "died",
			"silent/100 [95%]", "triple/100 [95%]", "not ok/100 [95%]", "1st byte", "wall"
		# The order asked for, then anything else found.
		m = split(order, ord, " ")
		for (i = 1; i <= nk; i++) { f = 0; for (j = 1; j <= m; j++) if (ord[j] == keys[i]) f = 1; if (!f) ord[++m] = keys[i] }
		for (j = 1; j <= m; j++) {
			k = ord[j]
			if (!(k in n)) continue
			split(k, kv, ",")
			bad = n[k] - o[k, "ok"]
			printf "%-7s | %5s | %5d | %3d | %6d | %6d | %5d | %4d | %4d | %-18s | %-18s | %-18s | %9s | %6s\n",
				kv[1], kv[2], n[k], o[k, "ok"], o[k, "silent"], o[k, "triple"], o[k, "panic"],
				o[k, "hung"], o[k, "died"], wilson(o[k, "silent"], n[k]), wilson(o[k, "triple"], n[k]),
				wilson(bad, n[k]), median(fb[k]), median(wall[k])
		}
		printf "(1st byte, wall: medians in seconds; a silent boot has no first byte)\n"
		printf "L1 test VM deaths (not counted above): %d (during minivmm boots %d, during QEMU boots %d, outside a boot %d)\n",
			deaths, dv["minivmm"], dv["qemu"], deaths - dv["minivmm"] - dv["qemu"]
	}' "$boots_file" "$deaths_file"
}

if [ ${#table[@]} -gt 0 ]; then
	# The vCPU counts found, in increasing order.
	read -r -a cpu_list <<<"$(cut -d' ' -f3 "${table[0]}" | sort -nu | tr '\n' ' ')"
	ab_table "${table[@]}"
	exit 0
fi

command -v "$QEMU" >/dev/null || die "$QEMU is not installed (scripts/install-deps.sh)"
L1_PIDFILE=$AB/l1.pid
L1_UNIT=boot
# A boot takes --limit seconds at most, QEMU's start in the emulated VM a few more.
SILENCE=$((limit + 120))
total=$((boots * ${#cpu_list[@]} * 2))
LIMIT=$((total * (limit + 30) + 300))
. "$ROOT/tests/linux/l1-vm.sh"

rm -rf "$AB"
mkdir -p "$AB"
"$BUILD_IMAGES" --ab "$OUT" >/dev/null
: >"$AB/boots.txt"
: >"$AB/l1-deaths.txt"
csv=$(IFS=,; echo "${cpu_list[*]}")
probe_flag=""
[ $guest = linux ] || probe_flag=" --probe"
cmd="tests/linux/ab-boot.sh --boots $boots --cpus \"$cpus\"$probe_flag --first $first --limit $limit --machine $machine"
echo "ab-boot: $total boots of $guest ($boots rounds, vCPUs $cpus, minivmm and QEMU -M $machine alternating) in the L1 test VM (logs: $AB)"
start=$(date +%s)

boot_job=""
stop_l1() {
	if [ -n "$boot_job" ]; then kill -KILL "$boot_job" 2>/dev/null || true; fi
	if [ -f "$L1_PIDFILE" ]; then kill -KILL "$(cat "$L1_PIDFILE")" 2>/dev/null || true; fi
	rm -f "$L1_PIDFILE"
}
trap stop_l1 EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# new_results LOG FROM: the boot lines of LOG from boot FROM on, as boots.txt has them.
new_results() {
	[ -f "$1" ] || return 0
	{ log_text "$1" | grep -ao '@@ AB [0-9].*' || true; } | sed 's/^@@ AB //' | awk -v from="$2" '$1 >= from'
}

next=0 l1=0 deaths=0 idle=0
while [ $next -lt $total ]; do
	l1=$((l1 + 1))
	log=$AB/l1.$l1.log
	boot_l1 "$log" "$OUT/l1-ab-initramfs.gz" \
		"ab.boots=$boots ab.cpus=$csv ab.guest=$guest ab.from=$next ab.first=$first ab.limit=$limit ab.machine=$machine" \
		>"$AB/l1.why" &
	boot_job=$!
	shown=0
	# The boots' lines as they come (run in the background and polled, so that a signal to
	# this script is acted on at once).
	while :; do
		done_now=0
		kill -0 $boot_job 2>/dev/null || done_now=1
		new_results "$log" "$next" >"$AB/l1.new"
		n=$(wc -l <"$AB/l1.new")
		[ "$n" -gt $shown ] && sed -n "$((shown + 1)),${n}p" "$AB/l1.new" | sed 's/^/  boot /'
		shown=$n
		[ $done_now = 1 ] && break
		sleep 2
	done
	wait $boot_job || true
	boot_job=""
	why=$(sed -n 1p "$AB/l1.why")
	sed "s/\$/ l1=$l1/" "$AB/l1.new" >>"$AB/boots.txt"
	if [ -s "$AB/l1.new" ]; then
		next=$(($(tail -n 1 "$AB/l1.new" | cut -d' ' -f1) + 1))
		idle=0
	else
		idle=$((idle + 1))
	fi
	[ $next -ge $total ] && break
	# The test VM ended before its last boot: it died (or never worked).
	during=$({ log_text "$log" | grep -ao '@@ AB-START [0-9].*' || true; } | tail -n 1 | cut -d' ' -f3-5)
	if [ -n "$during" ] && [ "$(cut -d' ' -f1 <<<"$during")" -ge "$next" ]; then
		where="during $during"
	elif [ -s "$AB/l1.new" ]; then
		where="between boots, after boot $((next - 1))"
	else
		where="before its first boot"
	fi
	deaths=$((deaths + 1))
	echo "l1=$l1 $where ($why)" >>"$AB/l1-deaths.txt"
	echo "the L1 test VM died $where ($why); the end of $log:"
	log_text "$log" | tail -n 30 | sed 's/^/    /'
	if [ $idle -ge 2 ]; then
		echo "ab-boot: two test VMs in a row ran no boot: stopping"
		break
	elif [ $deaths -ge "$max_deaths" ]; then
		echo "ab-boot: $deaths test VM deaths: stopping"
		break
	fi
	echo "ab-boot: a fresh test VM for boots $next to $((total - 1))"
done
rm -f "$AB/l1.new" "$AB/l1.why"
{
	echo "$cmd"
	echo "$(wc -l <"$AB/boots.txt") of $total boots of $guest in $(($(date +%s) - start))s, $l1 L1 test VMs" \
		"(first byte within ${first}s, each boot ${limit}s at most, QEMU -M $machine -accel kvm -cpu host; 256 MiB)"
	ab_table "$AB/boots.txt" "$AB/l1-deaths.txt"
} | tee "$AB/summary.txt"
[ "$(wc -l <"$AB/boots.txt")" = $total ]
