#!/usr/bin/env bash
# Install the Debian packages the harness needs (idempotent).
set -euo pipefail
. "$(dirname "$0")/lib.sh"  # -h

pkgs=(qemu-system-x86 ccache flex bison libelf-dev libssl-dev bc rsync cpio
      kmod xz-utils git make gcc perl python3 coreutils procps util-linux
      shellcheck python3-ply python3-git libc6-dev
      bochs bochsbios vgabios isolinux syslinux-common xorriso busybox-static
      gnuplot-nox dpkg-dev fakeroot openssl file)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
command -v apt-get >/dev/null || { echo "error: apt-get not found; install: ${missing[*]}" >&2; exit 1; }
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo ">>> installing: ${missing[*]}" >&2
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
