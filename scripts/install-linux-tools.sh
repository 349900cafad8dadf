#!/usr/bin/env bash
# Installs the Debian packages the Linux disk and volume groups run (and their integration tests use):
#   util-linux  blkid, partx, blockdev, wipefs, setpriv
#   mount       mount, umount, losetup
#   fdisk       sfdisk
#   e2fsprogs   mkfs.ext4, e2fsck, resize2fs, dumpe2fs
#   xfsprogs    mkfs.xfs, xfs_growfs, xfs_db
# Idempotent and quiet: does nothing when all are installed. Without root it only reports what is
# missing (the daemon then answers the affected RPCs with clear errors).
set -euo pipefail
packages=(util-linux mount fdisk e2fsprogs xfsprogs)
command -v dpkg-query >/dev/null 2>&1 || { echo "install-linux-tools: not a Debian-based system; install: ${packages[*]}" >&2; exit 0; }
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "install-linux-tools: missing Debian packages (need root to install): ${missing[*]}" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/install-linux-tools.log 2>&1; then
  apt-get update -qq >>/tmp/install-linux-tools.log 2>&1
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/install-linux-tools.log 2>&1 || {
    cat /tmp/install-linux-tools.log >&2
    exit 1
  }
fi
