#!/usr/bin/env bash
# Build the nested test VM's images into OUT (default build/linux) from Debian packages and the
# build: Debian's cloud kernel with the modules the suite needs, the L2 guest's initramfs
# (busybox, virtio drivers, mke2fs) and the L1 test VM's initramfs (busybox, KVM modules,
# minivmm with its libraries, the L2 kernel and initramfs, the scenarios).
#   build-images.sh [--ab] [OUT]
# --ab: also l1-ab-initramfs.gz, the test VM of tests/linux/ab-boot.sh (issue 35): the same
# archive followed by a second one with QEMU (its libraries and the firmware of its -kernel boot)
# and the A/B loop (ab-l1.sh), so that L1 boots the same L2 guests under QEMU -accel kvm too.
# The suite's own image does not change.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/linux
AB=0
[ "${1:-}" = --ab ] && { AB=1; shift; }
OUT=${1:-$ROOT/build/linux}
MINIVMM=${MINIVMM:-$ROOT/build/minivmm}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

die() { echo "build-images: $*" >&2; exit 1; }
[ -x "$MINIVMM" ] || die "no $MINIVMM (run make first)"
BUSYBOX=$(command -v busybox) || die "busybox-static is not installed (scripts/install-deps.sh)"

# The kernel package, once: boot/vmlinuz-* and lib/modules/*.
KPKG=$OUT/kernel
if ! ls "$KPKG"/boot/vmlinuz-* >/dev/null 2>&1; then
	"$ROOT/scripts/fetch-test-kernel.sh" "$KPKG" --modules >/dev/null
fi
VMLINUZ=$(ls "$KPKG"/boot/vmlinuz-* | sed -n 1p)
MODDIR=$(ls -d "$KPKG"/lib/modules/* | sed -n 1p)

# copy_modules DEST NAME...: the named modules, flat, in load order.
copy_modules() {
	local dest=$1 m f
	shift
	mkdir -p "$dest"
	: >"$dest/order"
	for m in "$@"; do
		f=$(find "$MODDIR/kernel" -name "$m.ko" -print -quit)
		[ -n "$f" ] || die "module $m not in $MODDIR"
		cp "$f" "$dest/"
		echo "$m" >>"$dest/order"
	done
}

# copy_binary ROOT PATH: PATH and the shared libraries it needs, at the same paths.
copy_binary() {
	local root=$1 bin=$2 lib
	mkdir -p "$root$(dirname "$bin")"
	cp -L "$bin" "$root$bin"
	for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

# base_root DIR: busybox with its applets linked at start-up by the init script.
base_root() {
	local r=$1
	rm -rf "$r"
	mkdir -p "$r"/{bin,sbin,dev,proc,sys,tmp,mnt,run,etc,root}
	cp "$BUSYBOX" "$r/bin/busybox"
	ln -s ../bin/busybox "$r/sbin/init"
}

pack() { (cd "$1" && find . | cpio -o -H newc --quiet | gzip -1) >"$2"; }

# L2: the guest minivmm boots.
L2=$OUT/l2-root
base_root "$L2"
copy_modules "$L2/modules" virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev \
	virtio_pci virtio_mmio failover net_failover virtio_net virtio_blk virtio_balloon virtio-rng \
	fuse virtiofs virtio_console
copy_binary "$L2" /sbin/mke2fs
cp /etc/mke2fs.conf "$L2/etc/"
cp "$HERE/guest-init.sh" "$L2/init"
chmod +x "$L2/init"
pack "$L2" "$OUT/l2-initramfs.gz"

# L1: the test VM that runs minivmm on its nested /dev/kvm.
L1=$OUT/l1-root
base_root "$L1"
# sch_netem, ifb and the rest: the lossy link of probe_tcp_loss (with iproute2's tc below).
copy_modules "$L1/modules" irqbypass kvm kvm-amd tun loop sch_netem sch_ingress cls_matchall \
	act_mirred ifb
copy_binary "$L1" "$MINIVMM"
# libslirp is loaded by minivmm (dlopen) only for --net user: ldd does not list it.
# awk reads to the end: leaving early would kill ldconfig with SIGPIPE once its list outgrows
# the pipe, and pipefail would end this script with status 141 (it did, one run in two).
SLIRP_LIB=$(ldconfig -p | awk '/libslirp\.so\.0 .*x86-64/ && !found { print $NF; found = 1 }')
[ -n "$SLIRP_LIB" ] || die "libslirp.so.0 is not installed (libslirp0, scripts/install-deps.sh)"
copy_binary "$L1" "$SLIRP_LIB"
mv "$L1$MINIVMM" "$L1/bin/minivmm"
for b in /sbin/e2fsck /sbin/mke2fs /usr/bin/script /usr/sbin/tc; do copy_binary "$L1" "$b"; done
# The L2 kernel's modules where `minivmm run` looks for them (/lib/modules/VERSION of its root,
# the test VM's own): modules.dep made by depmod (the package's maintainer scripts would), and
# the modules run's guest loads.
KVER=$(basename "$MODDIR")
[ -f "$MODDIR/modules.dep" ] || depmod -b "$KPKG" "$KVER" ||
	die "depmod failed (kmod, scripts/install-deps.sh)"
RUNMOD=$L1/lib/modules/$KVER
mkdir -p "$RUNMOD"
cp "$MODDIR/modules.dep" "$MODDIR/modules.builtin" "$RUNMOD/"
for d in drivers/virtio fs/fuse fs/overlayfs drivers/char/virtio_console.ko \
	drivers/net/virtio_net.ko drivers/net/net_failover.ko net/core/failover.ko; do
	mkdir -p "$RUNMOD/kernel/$(dirname "$d")"
	cp -r "$MODDIR/kernel/$d" "$RUNMOD/kernel/$d"
done
# Debian's virtio-fs back end (qemu-system-common), for the fs scenarios.
VIRTIOFSD=/usr/lib/qemu/virtiofsd
[ -x $VIRTIOFSD ] || die "$VIRTIOFSD is not installed (qemu-system-common, scripts/install-deps.sh)"
copy_binary "$L1" $VIRTIOFSD
# Debian's vhost-user-blk back end (qemu-system-common), for the vublk scenarios.
QSD=/usr/bin/qemu-storage-daemon
[ -x $QSD ] || die "$QSD is not installed (qemu-system-common, scripts/install-deps.sh)"
copy_binary "$L1" $QSD
cp /etc/mke2fs.conf "$L1/etc/"
mkdir -p "$L1/l2"
cp "$VMLINUZ" "$L1/l2/vmlinuz"
cp "$OUT/l2-initramfs.gz" "$L1/l2/initramfs.gz"
# The root-filesystem scenario's tree: busybox and the same init, no initramfs.
cp -a "$L2" "$L1/l2/rootfs"
rm -f "$L1/l2/rootfs/init"
cp "$HERE/guest-init.sh" "$L1/l2/rootfs/sbin/guest-init"
rm -f "$L1/l2/rootfs/sbin/init"
ln -s guest-init "$L1/l2/rootfs/sbin/init"
mkdir -p "$L1/probe"
cp "$ROOT/build/firmware/probe.elf" "$ROOT/build/firmware/probe.bzImage" "$L1/probe/"
# The start-up floor's guest and program (make examples; the startup scenario).
cp "$ROOT/build/examples/tiny-guest.elf" "$ROOT/build/examples/startup-floor" "$L1/probe/"
# The host end of the probe's TCP (make examples; the probe_tcp scenario).
cp "$ROOT/build/examples/tcpperf" "$L1/probe/"
# The timer of bench-snapshot.sh --net (make examples; the snapshot_user scenario).
cp "$ROOT/build/examples/first-byte" "$L1/probe/"
cp "$HERE/host-init.sh" "$L1/init"
cp "$HERE/scenarios.sh" "$L1/scenarios.sh"
chmod +x "$L1/init"
pack "$L1" "$OUT/l1-initramfs.gz"
cp "$VMLINUZ" "$OUT/vmlinuz"

if [ $AB = 1 ]; then
	QEMU_BIN=$(command -v qemu-system-x86_64) ||
		die "qemu-system-x86_64 is not installed (qemu-system-x86, scripts/install-deps.sh)"
	X=$OUT/l1-ab-extra
	rm -rf "$X"
	mkdir -p "$X/usr/share/qemu" "$X/usr/share/seabios"
	copy_binary "$X" "$QEMU_BIN"
	# -M microvm boots through qboot (bios-microvm.bin), -M pc through SeaBIOS and
	# linuxboot_dma; a PVH ELF (the probe) through pvh.bin. Debian's QEMU looks in both folders.
	for f in qboot.rom bios-microvm.bin pvh.bin linuxboot_dma.bin kvmvapic.bin; do
		cp -L "/usr/share/qemu/$f" "$X/usr/share/qemu/"
	done
	cp -L /usr/share/seabios/bios-256k.bin "$X/usr/share/seabios/"
	cp "$HERE/ab-l1.sh" "$X/ab-l1.sh"
	# The kernel unpacks concatenated archives in order: this one adds to the suite's.
	pack "$X" "$OUT/l1-ab-extra.gz"
	cat "$OUT/l1-initramfs.gz" "$OUT/l1-ab-extra.gz" >"$OUT/l1-ab-initramfs.gz"
fi
echo "$OUT"
