#!/usr/bin/env bash
# Installs the Debian packages the server (and with --test, the test suites) use on this machine.
# Idempotent and quiet when everything is present. Needs root for apt-get; without root it only
# reports what is missing (the server then answers the affected RPCs with clear errors).
set -euo pipefail
cd "$(dirname "$0")/.."
for part in scripts/install-linux-tools.sh; do
  [ -f "$part" ] && bash "$part"
done
if [ "${1:-}" = "--test" ]; then
  bash test/conformance/setup-python.sh .cache/python-stubs
  [ -f scripts/install-test-tools.sh ] && bash scripts/install-test-tools.sh
fi
exit 0
