/**
 * The facts a Windows write was decided on, as data for the worker: the worker script's `Unchanged`
 * (scripts/worker-script.ts) reads the same facts again in the PowerShell call that writes and
 * refuses — FailedPrecondition `refusing to <what>: it changed since it was looked up (<fact> <was>
 * -> <is>)`, nothing written — when any differs. The worker decides nothing else; the decision is the
 * service's (policy/block-policy.ts), on these facts. Every value is a string spelled exactly as the
 * script spells it (`VolumeFacts`, `DiskFacts`), sent in the request's `expect` (JSON on stdin,
 * never in the script's text).
 */
import type { CimDisk, CimPartition, CimVolume } from "./cim-types.ts";

/**
 * A volume's facts: every fact the service's rule reads of it (policy/block-policy.ts, through
 * host/windows/volume.ts): its file system type, where it is reachable (the drive letter, which also
 * says whether it is the system volume, and folder access paths), its partition's place (disk,
 * partition, offset, size: the identity) and whether its disk is offline.
 */
export type ExpectedVolumeFacts = {
  fileSystemType: string;
  /** The partition's drive letter and folder access paths, `, `-separated, as the worker lists them. */
  accessPaths: string;
  diskNumber: string;
  partitionNumber: string;
  offset: string;
  size: string;
  /** PowerShell's spelling of a boolean: `True` / `False`. */
  isOffline: string;
};

/** A disk's facts: the physical disk behind the number, its size, whether it is offline, its partition style. */
export type ExpectedDiskFacts = {
  path: string;
  size: string;
  /** PowerShell's spelling of a boolean: `True` / `False`. */
  isOffline: string;
  partitionStyle: string;
};

export const expectedVolumeFacts = (p: CimPartition, v: CimVolume, diskOffline: boolean): ExpectedVolumeFacts => ({
  fileSystemType: String(v.fileSystemType),
  accessPaths: p.accessPaths.join(", "),
  diskNumber: String(p.diskNumber),
  partitionNumber: String(p.partitionNumber),
  offset: p.offset.toString(),
  size: p.size.toString(),
  isOffline: diskOffline ? "True" : "False",
});

export const expectedDiskFacts = (d: CimDisk): ExpectedDiskFacts => ({
  path: d.path,
  size: d.size.toString(),
  isOffline: d.isOffline ? "True" : "False",
  partitionStyle: String(d.partitionStyle),
});
