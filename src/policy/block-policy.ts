/**
 * Decisions shared by the disk and volume services: privilege, disk-number validation, the per-disk
 * lock, and the refusals that keep csi-proxy from destroying data (docs/linux-concept-map.md "Beyond
 * upstream: never destroy data"). Platform-neutral: they work on the facts the hosts report (host-device.ts, groups/disk/host-api.ts).
 */
import { Code, CsiProxyError, failedPrecondition, invalidArgument, permissionDenied } from "../errors.ts";
import type { HostDevice } from "./host-device.ts";

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
