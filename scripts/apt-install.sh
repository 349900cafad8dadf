#!/usr/bin/env bash
# apt-install.sh WHO PACKAGE...: installs the Debian packages not yet installed; quiet and
# idempotent. Runs `apt-get update` only when an install fails (a fresh machine's lists are empty).
# Without root (or off Debian) it only reports what is missing and succeeds: callers then run
# without those tools and say so where they are needed.
set -euo pipefail
who=$1
shift
command -v dpkg-query >/dev/null 2>&1 || { echo "$who: not a Debian-based system; install: $*" >&2; exit 0; }
missing=()
for p in "$@"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "$who: missing Debian packages (need root to install): ${missing[*]}" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
log=/tmp/$who.log
# A long step (a minute or more on a fresh machine): said before it starts, on stderr.
echo "$who: installing ${missing[*]} with apt-get (log: $log) ..." >&2
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  apt-get update -qq >>"$log" 2>&1
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 || {
    cat "$log" >&2
    exit 1
  }
fi
