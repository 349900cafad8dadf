#!/usr/bin/env bash
# Installs the Debian packages the test suites use beyond the server's own (scripts/install-linux-tools.sh):
#   tgt         tgtd + tgtadm: the iSCSI target the tests start on 127.0.0.1 (file-backed LUNs)
#   open-iscsi  iscsiadm: what the daemon's Linux iSCSI host runs (also needed in production)
#   util-linux  unshare, nsenter: private mount namespaces for the recording stand-ins
# Production on Linux additionally needs cifs-utils (mount.cifs) and the cifs / iscsi_tcp kernel
# modules; the tests do not, because this machine's kernel has neither module (see
# docs/smb-iscsi-system.md). Idempotent and quiet: does nothing when all are installed. Without
# root it only reports what is missing (the affected tests then skip with that reason).
set -euo pipefail
packages=(tgt open-iscsi util-linux)
command -v dpkg-query >/dev/null 2>&1 || { echo "install-test-tools: not a Debian-based system; install: ${packages[*]}" >&2; exit 0; }
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "install-test-tools: missing Debian packages (need root to install): ${missing[*]}" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
log=/tmp/install-test-tools.log
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  apt-get update -qq >>"$log" 2>&1
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 || {
    cat "$log" >&2
    exit 1
  }
fi

