/**
 * Decisions shared by the disk and volume services: privilege, disk-number validation, the per-disk
 * lock, and every refusal that keeps csi-proxy from destroying data (docs/linux-concept-map.md "Beyond
 * upstream: never destroy data"). Platform-neutral: they work on the facts the hosts report
 * (host-device.ts, groups/disk/host-api.ts, groups/volume/host-api.ts).
 *
 * The one place these refusals are decided: a service runs them on the facts it looked up, and a
 * host runs the same functions (through the service's write check, {@link volumeWriteCheck},
 * {@link diskWriteCheck}) on the facts it reads again right before writing. Hosts keep no rule of
 * their own; the Windows worker only refuses facts that changed since (host/windows/expected-facts.ts).
 */
import { Code, CsiProxyError, failedPrecondition, invalidArgument, permissionDenied } from "../errors.ts";
import type { HostDevice, NamespaceMountFact, SignatureFact } from "./host-device.ts";

/** Lock key of a disk, shared by both services: operations on one disk and its volumes serialise. */
export const diskLockKey = (diskNumber: number) => `disk:${diskNumber}`;

/** InvalidArgument unless `n` is a uint32 (the wire type); protects services called in-process. */
export function checkDiskNumber(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw invalidArgument(`disk number ${n} is not a uint32`);
  return n;
}

/**
 * What the host says is missing for managing disks at all (read once, when the service is built),
 * turned into a check that fails every call the same clear way: PermissionDenied
 * `<group> <Method>: <reason>`, before any host call.
 */
export function privilegeGuard(host: { missingPrivilege(): string | null }, group: string): (method: string) => void {
  const missing = host.missingPrivilege();
  return (method) => {
    if (missing) throw permissionDenied(`${group} ${method}: ${missing}`);
  };
}

/** Answers whether a mount point lies inside the kubelet path / working dirs. */
export type AllowedMountPoint = (mountPoint: string) => Promise<boolean>;

/**
 * A path policy's `check` turned into an inside/outside answer for mount points. Without a policy
 * every mount point a host reports is outside (foreign).
 */
export function allowedMountPoint(policy: { check(path: string): Promise<string> } | undefined): AllowedMountPoint {
  if (!policy) return async () => false;
  return (mountPoint) => policy.check(mountPoint).then(
    () => true,
    () => false,
  );
}

/**
 * Never destroy data: FailedPrecondition when any of `devices` (a disk and its partitions, or a volume
 * and its disk) holds the operating system, is busy (swap, holders…), is held open or mapped by
 * another process (its node: every opener counts, whatever its access; files on a filesystem mounted
 * from it do not), or is mounted outside the allowed dirs — or anywhere, when `allowMountsInside` is
 * false (going offline). Mounts inside the allowed dirs are csi-proxy's own. The message names every
 * reason (openers by pid and command).
 */
export async function refuseInUse(devices: readonly HostDevice[], what: string, allowMountsInside: boolean, isAllowed: AllowedMountPoint): Promise<void> {
  const reasons: string[] = [];
  for (const { name, use } of devices) {
    if (use.system) reasons.push(`${name} holds ${use.system}`);
    for (const busy of use.busy) reasons.push(`${name} is ${busy}`);
    for (const o of use.openers ?? []) reasons.push(`${name} is ${OPENED[o.access]} by pid ${o.pid} (${o.command || "command unknown"})`);
    for (const mountPoint of use.mountPoints) {
      if (!(await isAllowed(mountPoint))) reasons.push(`${name} is mounted at ${mountPoint}, outside the kubelet and working directories`);
      else if (!allowMountsInside) reasons.push(`${name} is mounted at ${mountPoint}; unmount it first`);
    }
  }
  if (reasons.length) throw failedPrecondition(`refusing to ${what}: ${[...new Set(reasons)].join("; ")}`);
}

const OPENED = { read: "open read-only", "read-write": "open for writing", mapped: "mapped into memory" } as const;

/** FailedPrecondition unless the disk is online (a host that does not know, null, passes). */
export function requireOnline(online: boolean | null, diskNumber: number, diskName: string | null, what: string): void {
  if (online === false) {
    throw failedPrecondition(`cannot ${what}: disk ${diskNumber}${diskName ? ` (${diskName})` : ""} is offline; bring it online with SetDiskState first`);
  }
}

/** Wraps a host error with context, keeping its code (host errors are Internal unless the host knew better). */
export function hostFailure(what: string, err: unknown): CsiProxyError {
  const e = CsiProxyError.from(err, Code.Internal);
  return new CsiProxyError(e.code, `${what}: ${e.message}`, { cause: err });
}

/** Runs a host call, wrapping its failure with `what` (see {@link hostFailure}). */
export function withContext<T>(what: string, call: Promise<T>): Promise<T> {
  return call.catch((e) => {
    throw hostFailure(what, e);
  });
}

/* ---------------------------------------------------------------- content: what a write would destroy */

const PARTITION_TABLE_SIGNATURES = new Set(["gpt", "pmbr", "dos"]);

/** The signatures that are content, not a partition table (a whole-disk exFAT also shows `dos`: the exFAT counts). */
export const contentSignatures = (sigs: readonly SignatureFact[]) => sigs.filter((x) => !PARTITION_TABLE_SIGNATURES.has(x.type.toLowerCase()));

/** "exfat at byte 3, dos at byte 510" for messages. */
export const describeSignatures = (sigs: readonly SignatureFact[]) => sigs.map((x) => `${x.type} at byte ${x.offset}`).join(", ");

/* ---------------------------------------------------------------- volume writes */

/** The facts of a volume a write is decided on (groups/volume/host-api.ts `VolumeFacts` is one). */
export interface VolumeWriteFacts {
  location: {
    id: string;
    diskNumber: number;
    name: string;
    diskOnline: boolean | null;
    devices: readonly HostDevice[];
    identity?: string;
    /** Where else the volume is reachable (Windows: drive letter, folder access paths); absent when the host does not report them. */
    accessPaths?: readonly string[];
  };
  /** What it holds (a format): absent when not read for this write. */
  content?: { fileSystem: string | null; empty: boolean; description: string };
  /** Every signature on the volume (a format, hosts that list them: Linux), read right before writing. */
  signatures?: readonly SignatureFact[];
  /** Its mounts in every mount namespace (a format, hosts that see them: Linux), read right before writing. */
  namespaceMounts?: readonly NamespaceMountFact[];
}

/** What a volume write may not meet. */
export interface VolumeWriteRule {
  /** For messages: `format volume X (/dev/loop3p1)`. */
  what: string;
  /** Mounts inside the allowed dirs are csi-proxy's own and allowed (a mount, a resize), or refused like any (a format). */
  allowMountsInside: boolean;
  isAllowed: AllowedMountPoint;
  /** A format: the filesystem it creates. Refuses any other content, any signature but one of this type, any access path, any mount elsewhere. */
  format?: string;
}

/**
 * Every refusal of a volume write, in this order: disk offline; the volume or its disk in use
 * ({@link refuseInUse}); and for a format: mounted in any mount namespace, holding anything but
 * nothing or one filesystem of the type being created, reachable at a drive letter or access path.
 * Facts a host did not report are not refused on. FailedPrecondition naming what; nothing written.
 */
export async function refuseVolumeWrite(facts: VolumeWriteFacts, rule: VolumeWriteRule): Promise<void> {
  const vol = facts.location;
  requireOnline(vol.diskOnline, vol.diskNumber, null, rule.what);
  await refuseInUse(vol.devices, rule.what, rule.allowMountsInside, rule.isAllowed);
  const fs = rule.format;
  if (fs === undefined) return;
  if (facts.namespaceMounts?.length) {
    const where = facts.namespaceMounts.map((m) => `${m.mountPoint} (mount namespace of pid ${m.pid})`).join(", ");
    throw failedPrecondition(`refusing to format ${vol.name}: it is mounted at ${where}`);
  }
  const content = facts.content;
  if (content && !content.empty && content.fileSystem?.toLowerCase() !== fs.toLowerCase()) {
    throw failedPrecondition(`refusing to ${rule.what} as ${fs}: it already holds ${content.description}; formatting would destroy that data`);
  }
  const sigs = facts.signatures;
  if (sigs && (sigs.length > 1 || sigs.some((x) => x.type.toLowerCase() !== fs.toLowerCase()))) {
    throw failedPrecondition(`refusing to format ${vol.name} as ${fs}: it holds ${describeSignatures(sigs)}`);
  }
  if (vol.accessPaths?.length) throw failedPrecondition(`refusing to format volume ${vol.id}: it is in use at ${vol.accessPaths.join(", ")}`);
}

/**
 * The check a volume write runs on the facts its host reads right before writing: the same volume
 * (same host identity, when the host has one) and {@link refuseVolumeWrite} with the same rule.
 */
export function volumeWriteCheck(decided: { identity?: string }, rule: VolumeWriteRule): (now: VolumeWriteFacts) => Promise<void> {
  return async (now) => {
    if (decided.identity !== undefined && now.location.identity !== decided.identity) {
      throw failedPrecondition(`refusing to ${rule.what}: the volume changed since it was looked up (${decided.identity} → ${now.location.identity})`);
    }
    await refuseVolumeWrite(now, rule);
  };
}

/* ---------------------------------------------------------------- disk writes */

/** The facts of a disk a write is decided on: the disk and its partitions (with their uses), and for a partition-table write its signatures. */
export interface DiskWriteFacts {
  disk: HostDevice & { number: number; online: boolean; identity?: string };
  partitions: readonly HostDevice[];
  /** Every signature on the whole disk (hosts that list them: Linux), read right before writing. */
  signatures?: readonly SignatureFact[];
  /** An intent record on the disk whose tool is gone: its step and the signature types it can leave. */
  unfinished?: { intent: string; writes: readonly string[] };
}

/** What a disk write may not meet. */
export interface DiskWriteRule {
  /** For messages: `partition disk 3 (/dev/loop3)`. */
  what: string;
  /** Mounts inside the allowed dirs allowed (deciding PartitionDisk), or refused like any (its writes, going offline). */
  allowMountsInside: boolean;
  isAllowed: AllowedMountPoint;
  /** Going online: how the disk is used does not matter (only that it is the disk looked up). */
  ignoreUses?: boolean;
  /**
   * A partition-table write (the disk must be online): `empty` (writing a new table: any signature refuses, but —
   * with `redo`, the intent record of a step whose end nobody saw — those that step can leave) or `table` (adding a
   * partition: any signature but a partition table refuses), named in the message as `to` (`write a
   * partition table to`, `add a partition to`).
   */
  table?: { kind: "empty" | "table"; to: string; redo?: string };
}

/**
 * Every refusal of a disk write, in this order: it or a partition in use ({@link refuseInUse}); for a
 * partition-table write, the disk offline, then what the write would destroy (signatures, when the
 * host lists them). FailedPrecondition naming what; nothing written.
 */
export async function refuseDiskWrite(facts: DiskWriteFacts, rule: DiskWriteRule): Promise<void> {
  if (!rule.ignoreUses) await refuseInUse([facts.disk, ...facts.partitions], rule.what, rule.allowMountsInside, rule.isAllowed);
  if (!rule.table) return;
  requireOnline(facts.disk.online, facts.disk.number, facts.disk.name, rule.what);
  if (!facts.signatures) return;
  // Redoing a step whose end nobody saw (`redo` names its intent record): what that step can leave is
  // ours to overwrite, if the record read now is still that one.
  const ours = rule.table.redo !== undefined && facts.unfinished?.intent === rule.table.redo ? facts.unfinished.writes : [];
  const found = (rule.table.kind === "empty" ? facts.signatures : contentSignatures(facts.signatures)).filter((s) => !ours.includes(s.type));
  if (found.length) throw failedPrecondition(`refusing to ${rule.table.to} ${facts.disk.name}: it holds ${describeSignatures(found)}`);
}

/** The check a disk write runs on the facts its host reads right before writing: the same disk, and {@link refuseDiskWrite}. */
export function diskWriteCheck(decided: { identity?: string }, rule: DiskWriteRule): (now: DiskWriteFacts) => Promise<void> {
  return async (now) => {
    if (decided.identity !== undefined && now.disk.identity !== decided.identity) {
      throw failedPrecondition(`refusing to ${rule.what}: the disk changed since it was looked up (${decided.identity} → ${now.disk.identity})`);
    }
    await refuseDiskWrite(now, rule);
  };
}
