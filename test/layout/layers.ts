/**
 * The layer rule of src/: every product module belongs to one room, and each room states the rooms
 * (or single modules) it may import — what is not listed is forbidden. docs/architecture.md "Rooms
 * and the layer rule" explains the floors; test/layout/layers.test.ts holds the tree to it.
 *
 * Imports are read as text (static `import … from`, `export … from`, `import("…")`), type-only
 * imports included: a type that points up is a dependency up too.
 */
import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";

export const repoRoot = path.resolve(import.meta.dirname, "../..");

/** Rooms, matched in this order by repository-relative path (first match wins). */
export const ROOMS: readonly { room: string; match: (file: string) => boolean }[] = [
  { room: "gen", match: (f) => f.startsWith("src/gen/") },
  { room: "types", match: (f) => f.startsWith("src/types/") },
  // The ground floor: shared vocabulary every floor may use.
  { room: "ground", match: (f) => f.startsWith("src/util/") || ["src/errors.ts", "src/version.ts", "src/proxy-config.ts"].includes(f) },
  { room: "log", match: (f) => f.startsWith("src/log/") },
  { room: "win32", match: (f) => f.startsWith("src/win32/") },
  { room: "win32-service", match: (f) => f.startsWith("src/win32-service/") },
  { room: "api", match: (f) => f.startsWith("src/api/") },
  { room: "compat", match: (f) => f.startsWith("src/compat/") },
  { room: "policy", match: (f) => f.startsWith("src/policy/") },
  { room: "state", match: (f) => f.startsWith("src/state/") },
  // What a group promises a host and the types it speaks: the only part of a group a host sees.
  { room: "group-contracts", match: (f) => /^src\/groups\/[^/]+\/(host-api|types)\.ts$/.test(f) },
  { room: "groups", match: (f) => f.startsWith("src/groups/") },
  { room: "host-shared", match: (f) => f.startsWith("src/host/") && (f.split("/").length === 3 || f.startsWith("src/host/exec/")) },
  { room: "linux-kernel", match: (f) => f.startsWith("src/host/linux/kernel/") },
  { room: "linux-paths", match: (f) => f.startsWith("src/host/linux/paths/") },
  { room: "linux-mounts", match: (f) => f.startsWith("src/host/linux/mounts/") },
  { room: "linux-block", match: (f) => f.startsWith("src/host/linux/block/") },
  { room: "linux-hosts", match: (f) => f.startsWith("src/host/linux/") },
  { room: "windows-powershell", match: (f) => f.startsWith("src/host/windows/powershell/") },
  { room: "windows-hosts", match: (f) => f.startsWith("src/host/windows/") },
  { room: "metrics", match: (f) => f.startsWith("src/metrics/") },
  { room: "rpc", match: (f) => f.startsWith("src/rpc/") },
  { room: "boot", match: (f) => f.startsWith("src/boot/") },
  { room: "compose", match: (f) => f.startsWith("src/compose/") },
  { room: "in-process", match: (f) => f.startsWith("src/in-process/") },
  { room: "client", match: (f) => f.startsWith("src/client/") },
  { room: "cli", match: (f) => f.startsWith("src/cli/") },
  // The programs and the package entry: they put the house together.
  { room: "top", match: (f) => /^src\/[^/]+\.ts$/.test(f) },
];

const BASE = ["ground", "gen", "types"];
const HOST_BASE = [...BASE, "log", "group-contracts", "policy", "state", "host-shared"];
/** A Windows group host file: what the PowerShell room must not reach up to. */
const WINDOWS_WINDOWS_FS_ERROR = "src/host/windows/windows-fs-error.ts";

/**
 * Room → what it may import besides itself: room names, or single modules (a path) where only that
 * module of a room may be reached. Everything else is forbidden.
 */
export const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  gen: [],
  types: [],
  ground: ["gen", "types"],
  log: BASE,
  win32: BASE,
  "win32-service": [...BASE, "log", "win32"],
  api: BASE,
  compat: BASE,
  policy: [...BASE, "compat"],
  // Windows: the lock primitive (LockFileEx in kernel32.ts) and the state directory's ACL check (win32.ts).
  state: [...BASE, "src/win32/kernel32.ts", "src/win32/win32.ts"],
  "group-contracts": [...BASE, "api", "policy"],
  groups: [...BASE, "api", "compat", "policy", "state", "group-contracts"],
  "host-shared": [...BASE, "log", "group-contracts", "policy", "state"],
  // Linux rooms, bottom to top: kernel < paths < mounts < block < the group hosts. No win32.
  "linux-kernel": HOST_BASE,
  "linux-paths": [...HOST_BASE, "linux-kernel"],
  "linux-mounts": [...HOST_BASE, "linux-kernel", "linux-paths"],
  "linux-block": [...HOST_BASE, "linux-kernel", "linux-paths", "linux-mounts"],
  "linux-hosts": [...HOST_BASE, "linux-kernel", "linux-paths", "linux-mounts", "linux-block"],
  // The PowerShell room under the Windows hosts (it reaches no group host).
  "windows-powershell": [...HOST_BASE, "win32", WINDOWS_WINDOWS_FS_ERROR],
  "windows-hosts": [...HOST_BASE, "win32", "win32-service", "windows-powershell"],
  // The facts the exposition reads: blocked operations per mount, host steps that outlived their call per device.
  metrics: [...BASE, "src/host/mount-gate.ts", "src/host/exec/late-steps.ts"],
  rpc: [...BASE, "log", "api", "metrics"],
  boot: [...BASE, "log", "win32", "src/rpc/call-activity.ts"],
  compose: [...BASE, "log", "api", "policy", "state", "group-contracts", "groups", "host-shared", "linux-kernel", "linux-paths", "linux-mounts", "linux-block", "linux-hosts", "windows-powershell", "windows-hosts", "win32", "win32-service", "rpc", "boot"],
  // The lock directory's default is a flag's and an option's default (state/lock-dir.ts defaultLockDir).
  "in-process": [...BASE, "api", "group-contracts", "groups", "rpc", "compose", "src/state/lock-dir.ts"],
  client: [...BASE, "api"],
  // `csi-proxyctl status` prints the daemon's late-step status file (its reader is the file's module).
  cli: [...BASE, "log", "api", "boot", "client", "src/host/exec/late-steps-file.ts", "src/state/lock-dir.ts"],
  top: ROOMS.map((r) => r.room),
};

export function roomOf(file: string): string | undefined {
  return ROOMS.find((r) => r.match(file))?.room;
}

/** Whether `from` (a module) may import `to` (a module), both repository-relative. */
export function mayImport(from: string, to: string): boolean {
  const a = roomOf(from);
  const b = roomOf(to);
  if (a === undefined || b === undefined) return false;
  if (a === b) return true;
  const allowed = ALLOWED[a] ?? [];
  return allowed.includes(b) || allowed.includes(to);
}

/** The forbidden arrows among `arrows` ("from -> to"), each with the rooms named. */
export function forbiddenArrows(arrows: readonly (readonly [string, string])[]): string[] {
  return arrows.filter(([from, to]) => !mayImport(from, to)).map(([from, to]) => `${from} (${roomOf(from) ?? "no room"}) -> ${to} (${roomOf(to) ?? "no room"})`);
}

/** Every relative import of every product module of src/ (tests, declarations and generated code left out). */
export function productArrows(): [string, string][] {
  const src = path.join(repoRoot, "src");
  const files = readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") && !e.name.endsWith(".d.ts"))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((f) => !f.includes(`${path.sep}src${path.sep}gen${path.sep}`));
  const arrows: [string, string][] = [];
  for (const f of files) {
    const text = readFileSync(f, "utf8");
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
      arrows.push([path.relative(repoRoot, f), path.relative(repoRoot, path.resolve(path.dirname(f), m[1]))]);
    }
  }
  return arrows;
}
