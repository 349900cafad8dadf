#!/usr/bin/env bash
# Installs Debian's 64-bit Wine (wine64, Wine 8 on Debian 12) and creates the private WINEPREFIX
# the Windows test suite uses (.cache/wine-prefix, reporting Windows 10 so that node.exe starts
# without NODE_SKIP_PLATFORM_CHECK, which services would not inherit).
# Idempotent and quiet when everything is present. Prints the wine64 path on success; exits 1
# (with the reason on stderr) when Wine cannot be installed, so callers can skip with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
WINE=/usr/lib/wine/wine64
prefix="${WINEPREFIX:-$PWD/.cache/wine-prefix}"

if [ ! -x "$WINE" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-wine: $WINE is missing and installing it needs root (apt-get install wine64)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "install-wine: installing wine64 and wine with apt-get (1-2 min; log: /tmp/install-wine.log) ..." >&2
  if ! apt-get install -y -qq --no-install-recommends wine64 wine >/tmp/install-wine.log 2>&1; then
    apt-get update -qq >>/tmp/install-wine.log 2>&1 || true
    if ! apt-get install -y -qq --no-install-recommends wine64 wine >>/tmp/install-wine.log 2>&1; then
      echo "install-wine: apt-get install wine64 failed (see /tmp/install-wine.log)" >&2
      exit 1
    fi
  fi
fi

if [ ! -f "$prefix/.csi-proxy-ready" ]; then
  mkdir -p "$prefix"
  echo "install-wine: preparing the Wine prefix $prefix (wineboot) ..." >&2
  export WINEPREFIX="$prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
  "$WINE" wineboot -i >/dev/null 2>&1 || { echo "install-wine: wineboot -i failed in $prefix" >&2; exit 1; }
  "$WINE" winecfg -v win10 >/dev/null 2>&1 || true
  "${WINE%wine64}wineserver64" -w 2>/dev/null || wineserver -w 2>/dev/null || true
  ver=$("$WINE" cmd /c ver 2>/dev/null | tr -d '\r' | grep -o '10\.0\.[0-9]*' || true)
  if [ -z "$ver" ]; then
    echo "install-wine: prefix $prefix does not report Windows 10" >&2
    exit 1
  fi
  touch "$prefix/.csi-proxy-ready"
fi
echo "$WINE"
