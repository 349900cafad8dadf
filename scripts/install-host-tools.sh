#!/usr/bin/env bash
# Installs the Debian packages the server (and with --test, the test suites) use on this machine.
# Idempotent and quiet when everything is present. Needs root for apt-get; without root it only
# reports what is missing (the server then answers the affected RPCs with clear errors).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-linux-tools.sh
if [ "${1:-}" = "--test" ]; then
  bash test/conformance/setup-python.sh .cache/python-stubs
  bash scripts/install-test-tools.sh
  # Wine and its private prefix for the Windows suites; they skip, saying why, when it cannot be had.
  bash scripts/install-wine.sh >/dev/null || echo "install-host-tools: Wine unavailable, the Windows suites will skip" >&2
  # PowerShell 7.6.9 (a .NET tool) for the real-engine suites (test/windows-engine/); they skip,
  # saying why, where dotnet is absent.
  bash scripts/install-pwsh.sh || echo "install-host-tools: PowerShell unavailable, the real-engine suites will skip" >&2
fi
exit 0
