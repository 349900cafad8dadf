/**
 * What is written on a block device, as libblkid sees it: the superblock/partition-table probe
 * (blkid -p) and every signature at every offset libblkid knows (wipefs --no-act). libblkid runs in
 * process (libblkid.ts); where it cannot be loaded (no koffi, no libblkid.so.1) the util-linux
 * programs run instead, with the same answers. Reads only, no cache: each call probes the device.
 */
import type { ProbeResult, Signature } from "./block-types.ts";
import { parseBlkidExport } from "./block-parsers.ts";
import { tool } from "./block-tool-runner.ts";
import { loadBlkid, type Blkid } from "./libblkid.ts";
import type { DeviceGate } from "./device-gate.ts";
import { open } from "node:fs/promises";

/** Offset of sb_inprogress in the primary xfs superblock (xfs_format.h): mkfs.xfs sets it first and clears it last. */
const XFS_SB_INPROGRESS = 126;

/** An xfs probe marked unfinished when its superblock says mkfs never finished (one 1-byte read of the device). */
async function withMkfsState(devPath: string, p: ProbeResult): Promise<ProbeResult> {
  if (p.kind !== "found" || p.type !== "xfs") return p;
  const h = await open(devPath, "r");
  try {
    const b = Buffer.alloc(1);
    await h.read(b, 0, 1, XFS_SB_INPROGRESS);
    return b[0] !== 0 ? { ...p, unfinished: true } : p;
  } finally {
    await h.close();
  }
}

export interface SignatureProbe {
  /** Signature probe of a device node (blkid -p). */
  probe(devPath: string): Promise<ProbeResult>;
  /** Every signature on the device, partition tables included, whatever blkid's verdict (wipefs --no-act). */
  listSignatures(devPath: string): Promise<Signature[]>;
}

/** `blkid -p -o export`: what {@link SignatureProbe.probe} runs where libblkid cannot be loaded. */
export async function probeWithBlkidProgram(devPath: string): Promise<ProbeResult> {
  const { stdout, exitCode } = await tool("blkid", ["-p", "-o", "export", devPath], { okExitCodes: [0, 2, 8], timeoutMs: 30_000 });
  if (exitCode === 2) return { kind: "empty" };
  if (exitCode === 8) return { kind: "ambivalent", detail: "blkid: ambivalent result, several signatures (see wipefs -n)" };
  const v = parseBlkidExport(stdout);
  // On a partition blkid also prints PART_ENTRY_* (the partition's own entry): not a signature.
  if (!v.TYPE && !v.PTTYPE) return { kind: "empty" };
  return { kind: "found", type: v.TYPE ?? null, usage: v.USAGE ?? null, ptType: v.PTTYPE ?? null };
}

/** `wipefs --no-act --json`: what {@link SignatureProbe.listSignatures} runs where libblkid cannot be loaded. */
export async function signaturesWithWipefs(devPath: string): Promise<Signature[]> {
  const { stdout } = await tool("wipefs", ["--no-act", "--json", devPath], { timeoutMs: 30_000 });
  if (!stdout.trim()) return [];
  const parsed = JSON.parse(stdout) as { signatures?: { type?: string; offset?: string }[] };
  return (parsed.signatures ?? []).map((s) => ({ type: s.type ?? "unknown", offset: BigInt(s.offset ?? "0") }));
}

/** libblkid in process, null where koffi or libblkid.so.1 is missing (then the programs run); loaded once per process. */
const blkidOrNull = (() => {
  let loaded: Promise<Blkid | null> | undefined;
  return () => (loaded ??= loadBlkid().catch(() => null));
})();

/** libblkid in process (libblkid.ts), or `blkid -p` and `wipefs --no-act` where libblkid cannot be loaded. */
export function createSignatureProbe(options: { deviceGate?: DeviceGate } = {}): SignatureProbe {
  /** libblkid's device reads take threads of libuv's pool: under the disk's gate (device-gate.ts). The programs take none. */
  const gated = <T>(devPath: string, what: string, op: () => Promise<T>) => (options.deviceGate ? options.deviceGate.run(devPath, what, op) : op());
  return {
    async probe(devPath) {
      const blkid = await blkidOrNull();
      const probe = await (blkid ? gated(devPath, "the libblkid probe", () => blkid.probe(devPath)) : probeWithBlkidProgram(devPath));
      return probe.kind === "found" && probe.type === "xfs" ? gated(devPath, "the xfs superblock's mkfs state", () => withMkfsState(devPath, probe)) : probe;
    },
    async listSignatures(devPath) {
      const blkid = await blkidOrNull();
      return blkid ? gated(devPath, "the libblkid signature listing", () => blkid.signatures(devPath)) : signaturesWithWipefs(devPath);
    },
  };
}
