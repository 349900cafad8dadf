#!/usr/bin/env bash
# Installs PowerShell 7.6.9 as a .NET tool into the project's cache (.cache/pwsh/pwsh), for the
# suites that run the worker scripts on a real PowerShell engine (test/windows-engine/).
# Needs `dotnet` (the .NET SDK) and NuGet; where dotnet is absent it prints why on stderr and exits
# 1, and those suites skip naming the reason. Idempotent and quiet when the engine is present;
# prints one line before the (long, ~1 min) first install. Telemetry and update checks are off for
# every dotnet and pwsh this starts (the same variables test/windows-engine/engine.ts sets).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=7.6.9
dir="$PWD/.cache/pwsh"
export POWERSHELL_TELEMETRY_OPTOUT=1 POWERSHELL_UPDATECHECK=Off DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

if ! command -v dotnet >/dev/null 2>&1; then
  echo "install-pwsh: dotnet (the .NET SDK) is not installed; PowerShell $VERSION installs as a .NET tool (dotnet tool install --tool-path .cache/pwsh PowerShell --version $VERSION)" >&2
  exit 1
fi
if [ -x "$dir/pwsh" ] && "$dir/pwsh" -NoLogo -NoProfile -NonInteractive -Command '$PSVersionTable.PSVersion.ToString()' 2>/dev/null | grep -qx "$VERSION"; then
  exit 0
fi
echo "install-pwsh: installing PowerShell $VERSION as a .NET tool into $dir" >&2
rm -rf "$dir"
if ! dotnet tool install --tool-path "$dir" PowerShell --version "$VERSION" >/tmp/install-pwsh.log 2>&1; then
  echo "install-pwsh: dotnet tool install PowerShell $VERSION failed (see /tmp/install-pwsh.log)" >&2
  exit 1
fi
