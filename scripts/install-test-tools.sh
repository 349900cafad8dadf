#!/usr/bin/env bash
# Installs the Debian packages the test suites use beyond the server's own (scripts/install-linux-tools.sh):
#   tgt         tgtd + tgtadm: the iSCSI target the tests start on 127.0.0.1 (file-backed LUNs)
#   open-iscsi  iscsiadm: what the daemon's Linux iSCSI host runs (also needed in production)
#   util-linux  unshare, nsenter: private mount namespaces for the recording stand-ins
#   exfatprogs, btrfs-progs, dosfstools  mkfs.exfat, mkfs.btrfs, mkfs.vfat: the foreign filesystems of the block red-team suite
#   golang-go, golang-google-grpc-dev  Go 1.19 + grpc-go 1.33: the old Go client of test/integration/go-client.test.ts
#   bindfs      a FUSE filesystem whose daemon test/redteam/hung-mount.test.ts stops (SIGSTOP): a path on
#               it must not block the event loop or other endpoints
#   libfuse3-dev, pkg-config  fuse3 headers: test/helpers/slow-fuse.c (compiled by the test, cached) serves files
#               whose reads/writes are slow or held on purpose (a loop device on a slow disk; a tool stuck in the kernel)
#   prometheus  prometheus + promtool: test/deploy/dashboard.test.ts scrapes the live daemon on 127.0.0.1 with
#               its own config and storage (a distribution-started prometheus service is not used)
#   unzip       zipinfo: test/package/release.test.ts lists the Windows zip's entries, modes and dates
#   python3-h2  Python's HTTP/2 framing (h2, hyperframe, hpack): the transport attack suite writes raw frames
#   g++-mingw-w64-x86-64, mingw-w64-x86-64-dev  MinGW-w64 and windows.h: the Win32 prototype and layout
#               check of test/windows/win32-layout.test.ts (its program also runs under Wine)
# Production on Linux additionally needs cifs-utils (mount.cifs) and the cifs / iscsi_tcp kernel
# modules; the tests do not, because this machine's kernel has neither module (see
# docs/smb-iscsi-system.md). Idempotent and quiet: does nothing when all are installed. Without
# root it only reports what is missing (the affected tests then skip with that reason).
set -euo pipefail
exec bash "$(dirname "$0")/apt-install.sh" install-test-tools tgt open-iscsi util-linux exfatprogs btrfs-progs dosfstools golang-go golang-google-grpc-dev g++-mingw-w64-x86-64 gcc-mingw-w64-x86-64 mingw-w64-x86-64-dev prometheus bindfs libfuse3-dev pkg-config unzip python3-h2
