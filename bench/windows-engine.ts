// The Windows host layer's per-call latency on a real PowerShell engine (pwsh 7.6.9, the .NET tool
// scripts/install-pwsh.sh installs), against upstream v1.1.3's way on the same engine: one new
// PowerShell process per call running a Storage cmdlet command line (Get-Disk, Get-Volume,
// Format-Volume, Resize-Partition over the stand-in Storage module of test/windows-engine/standins/).
// Ours: the Windows disk and volume services over the persistent worker pool (the byte-identical
// worker script), warm. Both sides read the same stand-in world. p50/p99 per RPC, in the same run.
// Mount/Unmount are Win32 calls on our side (no PowerShell): not measured here. Skips, saying why,
// without the engine. Bounded: OURS_N calls per RPC on our side, THEIRS_N process starts on theirs.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ENGINE_ENV, PWSH, STANDINS, STORAGE } from "../test/windows-engine/engine.ts";
import { CIM_ASSOCIATIONS, CIM_CLASSES } from "../test/windows/cim-signatures.ts";
import { PowerShellPool } from "../src/host/windows/powershell/powershell-pool.ts";
import { powershellArgs } from "../src/host/windows/powershell/scripts/worker-script.ts";
import { createWindowsBlockServices } from "../src/compose/windows-block-services.ts";
import type { Win32 } from "../src/win32/win32.ts";

const OURS_N = 40;
const THEIRS_N = 8;

if (!fs.existsSync(PWSH)) {
  console.log(`skipped: no PowerShell engine at ${PWSH} (needs dotnet; bash scripts/install-pwsh.sh)`);
  process.exit(0);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "csi-bench-engine-"));
const VOLUME = "\\\\?\\Volume{0b7e4a52-0000-0000-0000-100000000000}\\";
const world = {
  classes: CIM_CLASSES,
  associations: CIM_ASSOCIATIONS,
  instances: [
    ...[0, 1, 2, 3].map((n) => ({ id: `d${n}`, ns: STORAGE, class: "MSFT_Disk", props: { Number: n, Location: `PCI Slot ${n} : Adapter 0 : Port 0 : Target 0 : LUN 0`, Path: `\\\\?\\scsi#disk#${n}`, SerialNumber: `SN${n}`, Size: "10737418240", IsOffline: false, PartitionStyle: 2 } })),
    { id: "p1", ns: STORAGE, class: "MSFT_Partition", props: { DiskNumber: 1, PartitionNumber: 2, GptType: "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}", MbrType: null, Size: "1073741824", Offset: "16777216", DriveLetter: 0, AccessPaths: [VOLUME] } },
    { id: "v1", ns: STORAGE, class: "MSFT_Volume", props: { UniqueId: VOLUME, FileSystemType: 14, FileSystem: "NTFS", Size: "1073741824", SizeRemaining: "536870912" } },
  ],
  links: [["d1", "p1"], ["p1", "v1"]],
  results: {},
  errors: {},
};
fs.writeFileSync(path.join(dir, "world.json"), JSON.stringify(world));
fs.writeFileSync(path.join(dir, "calls.jsonl"), "");
const env = { ...process.env, ...ENGINE_ENV, PSModulePath: STANDINS, CSI_STANDIN_WORLD: path.join(dir, "world.json"), CSI_STANDIN_CALLS: path.join(dir, "calls.jsonl"), HOME: dir };

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const ms = (x: number) => `${x.toFixed(1)} ms`;

async function timed(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

/** One new pwsh per call, v1.1.3-style: the command line is the cmdlet text (constant here: the bench's own ids). */
function onePwsh(command: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(PWSH, ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command", command], { env, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    child.stdout.resume();
    child.on("close", (code) => (code === 0 && !err.trim() ? resolve() : reject(new Error(`pwsh ${code}: ${err.slice(0, 300)}`))));
  });
}

const pool = new PowerShellPool({ command: { file: PWSH, args: powershellArgs(), env: { ...ENGINE_ENV, PSModulePath: STANDINS, CSI_STANDIN_WORLD: env.CSI_STANDIN_WORLD, CSI_STANDIN_CALLS: env.CSI_STANDIN_CALLS, HOME: dir } }, size: 2 });
const { disk, volume } = createWindowsBlockServices({ win32: {} as Win32, pool });
const t0 = performance.now();
await pool.call("ping");
console.log(`our pool: first worker ready and answering in ${ms(performance.now() - t0)} (paid once, at the first call)`);

const rpcs: [string, () => Promise<unknown>, string][] = [
  ["ListDiskLocations", () => disk.listDiskLocations(), "Get-Disk | Select-Object Number, Location | ConvertTo-Json"],
  ["GetDiskStats", () => disk.getDiskStats({ diskNumber: 1 }), "(Get-Disk -Number 1).Size"],
  ["IsVolumeFormatted", () => volume.isVolumeFormatted({ volumeId: VOLUME }), `(Get-Volume -UniqueId '${VOLUME}').FileSystemType`],
  ["GetVolumeStats", () => volume.getVolumeStats({ volumeId: VOLUME }), `Get-Volume -UniqueId '${VOLUME}' | Select-Object SizeRemaining, Size | ConvertTo-Json`],
];
console.log(`per call, p50 / p99 (ours: ${OURS_N} calls on warm workers; one pwsh per call: ${THEIRS_N} processes)`);
for (const [name, ours, theirs] of rpcs) {
  const a = await timed(OURS_N, ours);
  const b = await timed(THEIRS_N, () => onePwsh(theirs));
  console.log(`${name.padEnd(18)} ours ${ms(pct(a, 50))} / ${ms(pct(a, 99))}   one pwsh per call ${ms(pct(b, 50))} / ${ms(pct(b, 99))}   ×${(pct(b, 50) / pct(a, 50)).toFixed(0)} at p50`);
}
await pool.close();
fs.rmSync(dir, { recursive: true, force: true });
