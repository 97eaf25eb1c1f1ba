#!/bin/sh
# Fetch Debian's LZ4-compressed cloud kernel (for the stock-kernel integration test) into DIR,
# once: prints the path of the vmlinuz. With --modules it keeps lib/modules as well (the nested
# test VM loads KVM and virtio drivers from it). Uses only Debian's archive.
set -eu
dir=${1:?usage: fetch-test-kernel.sh DIR [--modules]}
modules=${2:-}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
existing=$(ls "$dir"/boot/vmlinuz-* 2>/dev/null | head -n 1 || true)
if [ -n "$existing" ]; then
	echo "$existing"
	exit 0
fi
pkg() { apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ && !found++ {print $2}'; }
name=$(pkg)
if [ -z "$name" ]; then
	apt-get update -q >&2
	name=$(pkg)
fi
[ -n "$name" ] || { echo "fetch-test-kernel: no linux-image-cloud-amd64 in the apt sources" >&2; exit 1; }
cd "$dir"
# apt-get download drops privileges to _apt; a world-writable staging dir keeps it quiet.
tmp=$(mktemp -d)
chmod 777 "$tmp"
(cd "$tmp" && apt-get download -q "$name" >&2) || { apt-get update -q >&2 && (cd "$tmp" && apt-get download -q "$name" >&2); }
dpkg-deb -x "$tmp"/*.deb "$dir/pkg"
rm -rf "$tmp"
mkdir -p boot
[ "$modules" = --modules ] && mv pkg/lib .
mv pkg/boot/vmlinuz-* boot/
rm -rf pkg
ls "$dir"/boot/vmlinuz-* | head -n 1
