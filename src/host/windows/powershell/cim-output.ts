/**
 * Parsing of what the worker's ops return (JSON made by ConvertTo-Json in Windows PowerShell 5.1)
 * into typed values. Strict: anything not shaped as expected is an Internal error naming the op,
 * never a silently wrong answer. UInt64 sizes travel as decimal strings (JSON numbers would lose
 * precision above 2^53).
 */
import { internal } from "../../../errors.ts";
import type { CimDisk, CimPartition, CimVolume } from "./cim-types.ts";
import { expectedVolumeFacts, type ExpectedVolumeFacts } from "./expected-facts.ts";

type Obj = Record<string, unknown>;

function bad(op: string, why: string): never {
  throw internal(`${op}: unexpected PowerShell output: ${why}`);
}

function obj(op: string, v: unknown): Obj {
  if (v === null || typeof v !== "object" || Array.isArray(v)) bad(op, `expected an object, got ${JSON.stringify(v)?.slice(0, 100)}`);
  return v as Obj;
}

/** A JSON array; PowerShell 5.1 can turn a one-element array into the element and an empty one into null, so both are accepted. */
export function list(_op: string, v: unknown): unknown[] {
  if (v === null || v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

function int(op: string, o: Obj, key: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) bad(op, `${key} is not a non-negative integer: ${JSON.stringify(v)}`);
  return v;
}

function str(op: string, o: Obj, key: string): string {
  const v = o[key];
  if (v === null || v === undefined) return "";
  if (typeof v !== "string") bad(op, `${key} is not a string: ${JSON.stringify(v)}`);
  return v;
}

/** A UInt64 sent as a decimal string (or a safe integer). */
function u64(op: string, o: Obj, key: string): bigint {
  const v = o[key];
  if (typeof v === "string" && /^\d+$/.test(v)) return BigInt(v);
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  if (v === "" || v === null || v === undefined) return 0n;
  bad(op, `${key} is not an unsigned integer: ${JSON.stringify(v)}`);
}

export function parseDisk(op: string, v: unknown): CimDisk {
  const o = obj(op, v);
  const serial = o.serialNumber;
  if (serial !== null && serial !== undefined && typeof serial !== "string") bad(op, `serialNumber is not a string: ${JSON.stringify(serial)}`);
  if (typeof o.isOffline !== "boolean") bad(op, `isOffline is not a boolean: ${JSON.stringify(o.isOffline)}`);
  return {
    number: int(op, o, "number"),
    location: str(op, o, "location"),
    path: str(op, o, "path"),
    serialNumber: (serial as string | null | undefined) ?? null,
    size: u64(op, o, "size"),
    isOffline: o.isOffline,
    partitionStyle: int(op, o, "partitionStyle"),
  };
}

export function parsePartition(op: string, v: unknown): CimPartition {
  const o = obj(op, v);
  const mbr = o.mbrType;
  if (mbr !== null && mbr !== undefined && (typeof mbr !== "number" || !Number.isInteger(mbr))) bad(op, `mbrType is not an integer: ${JSON.stringify(mbr)}`);
  return {
    diskNumber: int(op, o, "diskNumber"),
    partitionNumber: int(op, o, "partitionNumber"),
    gptType: str(op, o, "gptType"),
    mbrType: (mbr as number | null | undefined) ?? null,
    size: u64(op, o, "size"),
    offset: u64(op, o, "offset"),
    driveLetter: str(op, o, "driveLetter").replace(/\0/g, ""),
    accessPaths: list(op, o.accessPaths).map((x) => parseString(op, x)),
  };
}

export function parseVolume(op: string, v: unknown): CimVolume {
  const o = obj(op, v);
  return {
    uniqueId: str(op, o, "uniqueId"),
    fileSystemType: int(op, o, "fileSystemType"),
    fileSystem: str(op, o, "fileSystem"),
    size: u64(op, o, "size"),
    sizeRemaining: u64(op, o, "sizeRemaining"),
  };
}

/**
 * volume.facts: the volume, its partition, and the worker's own `VolumeFacts` of them (the facts a
 * write's worker call compares, its disk's offline state included), read in one worker call. The
 * facts must say exactly what the volume and partition say (expectedVolumeFacts): so the facts the
 * service's rule is given and the facts the write's call compares are the same, or this is Internal.
 */
export function parseVolumeFacts(op: string, v: unknown): { volume: CimVolume; partition: CimPartition; diskOffline: boolean; facts: ExpectedVolumeFacts } {
  const o = obj(op, v);
  const volume = parseVolume(op, o.volume);
  const partition = parsePartition(op, o.partition);
  const f = obj(op, o.facts);
  if (f.isOffline !== "True" && f.isOffline !== "False") bad(op, `facts.isOffline is not True or False: ${JSON.stringify(f.isOffline)}`);
  const facts = expectedVolumeFacts(partition, volume, f.isOffline === "True");
  const keys = Object.keys(f).sort();
  if (keys.join() !== Object.keys(facts).sort().join() || keys.some((k) => f[k] !== facts[k as keyof ExpectedVolumeFacts])) bad(op, `facts ${JSON.stringify(f)} are not those of the volume and partition read with them (${JSON.stringify(facts)})`);
  return { volume, partition, diskOffline: f.isOffline === "True", facts };
}

export function parseSupportedSize(op: string, v: unknown): { sizeMin: bigint; sizeMax: bigint } {
  const o = obj(op, v);
  return { sizeMin: u64(op, o, "sizeMin"), sizeMax: u64(op, o, "sizeMax") };
}

export function parseString(op: string, v: unknown): string {
  if (typeof v !== "string") bad(op, `expected a string, got ${JSON.stringify(v)?.slice(0, 100)}`);
  return v;
}

export function parseStringList(op: string, v: unknown): string[] {
  return list(op, v).map((x) => parseString(op, x));
}

/**
 * The x64 offsets page83FromDescriptor reads (windows.h / winioctl.h names), compared with
 * MinGW-w64's headers by test/windows/win32-layout.test.ts.
 */
export const DEVICE_ID_LAYOUT = {
  STORAGE_DEVICE_ID_DESCRIPTOR: { NumberOfIdentifiers: 8, Identifiers: 12 },
  STORAGE_IDENTIFIER: { CodeSet: 0, IdentifierSize: 8, NextOffset: 10, Association: 12, Identifier: 16 },
} as const;

/**
 * The page 0x83 id from a STORAGE_DEVICE_ID_DESCRIPTOR (IOCTL_STORAGE_QUERY_PROPERTY,
 * StorageDeviceIdProperty), as upstream: the first identifier associated with the device (0) whose
 * code set is ASCII (2, returned verbatim) or binary (1, lower-case hex); "" when none.
 */
export function page83FromDescriptor(buf: Uint8Array): string {
  const D = DEVICE_ID_LAYOUT.STORAGE_DEVICE_ID_DESCRIPTOR, I = DEVICE_ID_LAYOUT.STORAGE_IDENTIFIER;
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.length < D.Identifiers) return "";
  const count = b.readUInt32LE(D.NumberOfIdentifiers);
  let off = D.Identifiers;
  for (let i = 0; i < count && off + I.Identifier <= b.length; i++) {
    const codeSet = b.readUInt32LE(off + I.CodeSet), size = b.readUInt16LE(off + I.IdentifierSize), next = b.readUInt16LE(off + I.NextOffset), assoc = b.readUInt32LE(off + I.Association);
    const id = b.subarray(off + I.Identifier, Math.min(b.length, off + I.Identifier + size));
    if (assoc === 0 && codeSet === 2) return id.toString("latin1");
    if (assoc === 0 && codeSet === 1) return id.toString("hex");
    if (next === 0) break;
    off += next;
  }
  return "";
}
