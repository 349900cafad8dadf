#!/usr/bin/env bash
# Installs the Debian packages the Linux host layer runs (and the integration tests use):
#   util-linux  blkid, partx, blockdev, wipefs, setpriv
#   mount       mount, umount, losetup
#   fdisk       sfdisk
#   e2fsprogs   mkfs.ext4, e2fsck, resize2fs, dumpe2fs
#   xfsprogs    mkfs.xfs, xfs_growfs, xfs_db
#   cifs-utils  mount.cifs (SMB group; the kernel's cifs module is needed too)
#   open-iscsi  iscsiadm, iscsid (iSCSI group; the kernel's iscsi_tcp module is needed too)
# Then prepares what those tools expect to find, as a booted system has it: iscsiadm takes its record
# locks in /run/lock/iscsi, which a systemd boot creates (tmpfiles) but a container or chroot lacks.
# Idempotent and quiet: does nothing when all are installed. Without root it only reports what is
# missing (the daemon then answers the affected RPCs with clear errors).
set -euo pipefail
bash "$(dirname "$0")/apt-install.sh" install-linux-tools util-linux mount fdisk e2fsprogs xfsprogs cifs-utils open-iscsi
if [ "$(id -u)" -eq 0 ] && [ ! -d /run/lock/iscsi ]; then
  mkdir -p -m 0755 /run/lock && mkdir -m 0700 /run/lock/iscsi
fi
