/**
 * Tests that may skip themselves in CI (CI=true, root, every tool of scripts/install-host-tools.sh
 * installed), each with the reason it cannot run there. Any other skip fails the run
 * (check-skips.ts): a suite that silently stops running is a suite that stopped testing.
 */
export interface AllowedSkip {
  /** Test file, relative to the repository root. */
  file: string;
  /** The skipped test's or suite's name, exactly. */
  name: string;
  /** Why CI cannot run it. */
  why: string;
  /** When set, the skip is allowed only with a reason matching it (any other reason still fails the run). */
  reason?: RegExp;
}

export const allowedSkips: AllowedSkip[] = [
  {
    file: "src/host/linux/kernel/kernel-task-listing.test.ts",
    name: "the kernel's task listings give the /proc walk's answers",
    why: "the kernel's task iterator reports global pids, so the listing is used only in the initial PID namespace; a container's private PID namespace cannot run it",
    reason: /: not in the initial PID namespace$/,
  },
  {
    file: "test/redteam/block-redteam.test.ts",
    name: "vfat without kernel support: MountVolume is FailedPrecondition naming the module, not Internal",
    why: "needs a kernel without vfat; on one with it the case cannot be made (the module cannot be unloaded from a test)",
  },
  {
    file: "test/integration/system.test.ts",
    name: "service RPCs: allow-list and names first, then FailedPrecondition where systemd is not the init",
    why: "asserts the answer where systemd is not PID 1; the namespace suite beside it runs the systemd case everywhere",
  },
  {
    file: "test/integration/disk-volume.test.ts",
    name: "the root disk, named only by its disk number",
    why: "needs / on a block device the disk group lists (not so in a container or on an overlay root)",
  },
  {
    file: "test/integration/disk-volume.test.ts",
    name: "a daemon that is not root answers every disk/volume call with PermissionDenied naming root",
    why: "needs a clone user nobody can read; a clone under a private directory (/root) cannot be run as nobody",
  },
  {
    file: "test/windows/wine-in-process.test.ts",
    name: "grpc-js over upstream's csi-proxy.exe pipes (UPSTREAM_EXE)",
    why: "needs upstream's csi-proxy.exe (UPSTREAM_EXE=<path>), which the repository does not ship and CI does not fetch",
  },
  {
    file: "test/windows-engine/storage-engine.test.ts",
    name: "storage worker script on pwsh",
    why: "needs dotnet (the .NET SDK) to install PowerShell 7.6.9 as a .NET tool (scripts/install-pwsh.sh); skips only where dotnet is absent, a missing pwsh beside dotnet fails",
  },
  {
    file: "test/windows-engine/secret-logging.test.ts",
    name: "no secret in PowerShell's module or script block log",
    why: "needs dotnet for PowerShell 7.6.9 (scripts/install-pwsh.sh) and root for its private /dev/log; skips only where either is absent",
  },
  {
    file: "test/windows-engine/constrained-language.test.ts",
    name: "the worker script under Constrained Language Mode",
    why: "needs dotnet (the .NET SDK) to install PowerShell 7.6.9 as a .NET tool (scripts/install-pwsh.sh); skips only where dotnet is absent",
  },
  {
    file: "test/windows-engine/held-format.test.ts",
    name: "a Format handed to Windows is never cut short",
    why: "needs dotnet (the .NET SDK) to install PowerShell 7.6.9 as a .NET tool (scripts/install-pwsh.sh); skips only where dotnet is absent",
  },
  {
    file: "test/windows-engine/storage-ops.test.ts",
    name: "storage worker ops on pwsh, culture de-DE",
    why: "needs dotnet (the .NET SDK) to install PowerShell 7.6.9 as a .NET tool (scripts/install-pwsh.sh); skips only where dotnet is absent",
  },
  {
    file: "test/windows-engine/storage-ops.test.ts",
    name: "storage worker ops on pwsh, culture tr-TR",
    why: "needs dotnet (the .NET SDK) to install PowerShell 7.6.9 as a .NET tool (scripts/install-pwsh.sh); skips only where dotnet is absent",
  },
  {
    file: "test/windows-engine/storage-ops.test.ts",
    name: "a worker's crash and restart on pwsh",
    why: "needs dotnet (the .NET SDK) to install PowerShell 7.6.9 as a .NET tool (scripts/install-pwsh.sh); skips only where dotnet is absent",
  },
  {
    file: "test/windows-engine/smb-iscsi-system-ops.test.ts",
    name: "SMB/iSCSI/System worker script on pwsh",
    why: "needs dotnet (the .NET SDK) to install PowerShell 7.6.9 as a .NET tool (scripts/install-pwsh.sh); skips only where dotnet is absent",
  },
];
