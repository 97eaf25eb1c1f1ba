#!/bin/sh
# Install the Debian 12 packages minivmm builds and tests with; quiet no-op when all are present.
set -e
# qemu-system-common (which qemu-system-x86 depends on) is listed for what it provides itself: the
# vhost-user back ends virtiofsd and qemu-storage-daemon (docs/vhost-user.md).
PKGS="build-essential pkg-config clang libclang-rt-14-dev lld llvm clang-format libcriterion-dev libfdt-dev \
libseccomp-dev libslirp-dev liburing-dev qemu-system-x86 qemu-system-common iproute2 cpio kmod busybox-static device-tree-compiler \
procps util-linux e2fsprogs socat iputils-ping linux-perf gnuplot-nox libxml2-utils"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: need root to apt-get install:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends $missing
