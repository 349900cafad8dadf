/**
 * The texts real csi-proxy clients look for in an error message, and which situation carries which.
 * This table is the only place those texts live; services build such errors with
 * {@link fragmentError} and nothing else (which client matches which text, and what it does then:
 * docs/driver-compat.md, "Where clients match text" and "Message fragments").
 *
 * Why: no known client inspects the gRPC code, but democratic-csi (`e.details.includes(...)`) and
 * aws-ebs-csi-driver / amazon-ecs-agent (a regular expression on `err.Error()`) decide "already
 * done / harmless" by upstream's message text. So every error below keeps our precise code AND
 * contains the fragment as a case-sensitive substring, on Linux and Windows alike.
 *
 * Message convention: where upstream's own wording is also true for us it is used verbatim
 * (Windows path validation, Rmdir of a missing path); otherwise our message says what happened
 * and ends with ` [upstream: <fragment>]`.
 *
 * Situations where upstream master answers success (ConnectTarget of a connected target,
 * GetTargetDisks/DisconnectTarget of a target that is not connected, MountVolume of the same
 * volume at the same path, ResizeVolume growing by less than 100 MiB, Rmdir force of a missing
 * path, PathExists of a missing path → exists=false) are answered with success as well; they are
 * listed in {@link IDEMPOTENT_SUCCESSES} for the documentation and the tests.
 *
 * Codes a client or kubelet reads as "still in progress" (Canceled, DeadlineExceeded,
 * Unavailable, ResourceExhausted, Aborted) are never used for an ordinary, final failure. They
 * remain only where the outcome is really open or nothing was attempted: the client cancelled
 * (Canceled); a host tool, WMI call or Windows service did not finish within its bound and may
 * still complete or have half-completed (DeadlineExceeded — gRPC's own definition covers "may have
 * completed"); Win32 path/device calls that have not returned (Unavailable); the PowerShell worker
 * pool is shutting down or cannot start (Unavailable) or its queue is full / a CIM quota is hit and
 * the call was not attempted (ResourceExhausted). An unreachable SMB server or iSCSI portal, an SCM
 * refusal or a cmdlet's ResourceUnavailable is a final failure of that call: FailedPrecondition.
 */
import { Code, CsiProxyError } from "../errors.ts";

/** The situations in which a client matches a text. */
export type FragmentSituation =
  | "path-not-absolute"
  | "rmdir-missing"
  | "rmdir-parent-missing"
  | "smb-local-path-exists"
  | "smb-no-mapping"
  | "iscsi-target-unknown"
  | "iscsi-portal-unknown"
  | "volume-unmount-not-access-path"
  | "volume-target-path-missing"
  | "volume-target-path-not-mounted";

export interface FragmentRow {
  situation: FragmentSituation;
  /** The RPC(s) (group Method) answering with it. */
  rpc: string;
  /** When it happens. */
  when: string;
  /** The case-sensitive substring the message must contain. */
  fragment: string;
  /** Our gRPC code (upstream: always Unknown). */
  code: Code;
  /** Other codes of the same situation (a safety refusal), see `when`. */
  alsoCode?: Code[];
  /** Which client branches on it, and what it does on a match. */
  neededBy: string;
}

/** One row per situation. */
export const DRIVER_FRAGMENTS: readonly FragmentRow[] = Object.freeze([
  {
    situation: "path-not-absolute",
    rpc: "filesystem PathExists (also Mkdir, Rmdir, RmdirContents, CreateSymlink; never IsSymlink)",
    when: "the path passes the length, leading-\\ and character checks but is not `X:\\…` (Linux: does not start with /)",
    fragment: "not an absolute Windows path",
    code: Code.InvalidArgument,
    neededBy: "democratic-csi FilesystemPathExists: answers \"path absent\" instead of throwing",
  },
  {
    situation: "rmdir-missing",
    rpc: "filesystem Rmdir (force=false)",
    when: "the path does not exist, its parent does",
    fragment: "The system cannot find the file specified",
    code: Code.NotFound,
    neededBy: "democratic-csi NodeUnstageVolume removePath: ignores (already gone)",
  },
  {
    situation: "rmdir-parent-missing",
    rpc: "filesystem Rmdir (force=false)",
    when: "the parent directory does not exist either (must NOT carry the file-specified text, as upstream)",
    fragment: "The system cannot find the path specified",
    code: Code.NotFound,
    neededBy: "democratic-csi: throws, as against upstream",
  },
  {
    situation: "smb-local-path-exists",
    rpc: "smb NewSmbGlobalMapping",
    when: "local_path exists and is not a link to this remote path (a link to it is success)",
    fragment: "ResourceExists",
    code: Code.AlreadyExists,
    neededBy: "democratic-csi NodeStageVolume (smb): calls IsSymlink(local_path); a link → success, else rethrows",
  },
  {
    situation: "smb-no-mapping",
    rpc: "smb RemoveSmbGlobalMapping",
    when: "no mapping and no recorded use for the share root",
    fragment: "No MSFT_SmbGlobalMapping objects found",
    code: Code.NotFound,
    neededBy: "democratic-csi NodeUnstageVolume (smb): ignores (already unmapped)",
  },
  {
    situation: "iscsi-target-unknown",
    rpc: "iscsi ConnectTarget, DisconnectTarget, GetTargetDisks",
    when: "the portal or the IQN behind it is unknown to the initiator",
    fragment: "ObjectNotFound",
    code: Code.NotFound,
    neededBy: "democratic-csi getDiskNumberFromIscsiTarget (→ no disk) and NodeUnstageVolume DisconnectTarget: ignore",
  },
  {
    situation: "iscsi-portal-unknown",
    rpc: "iscsi DiscoverTargetPortal, RemoveTargetPortal",
    when: "the portal is not registered",
    fragment: "ObjectNotFound",
    code: Code.NotFound,
    neededBy: "democratic-csi RemoveTargetPortal (commented out upstream): ignores",
  },
  {
    situation: "volume-unmount-not-access-path",
    rpc: "volume UnmountVolume",
    when: "target_path is not a mount point (already unmounted: NotFound), or holds another volume or filesystem (safety refusal, nothing unmounted: FailedPrecondition)",
    fragment: "The access path is not valid",
    code: Code.NotFound,
    alsoCode: [Code.FailedPrecondition],
    neededBy: "democratic-csi NodeUnstageVolume (iscsi): ignores (already unmounted) and disconnects the target",
  },
  {
    situation: "volume-target-path-missing",
    rpc: "volume GetVolumeIDFromTargetPath",
    when: "target_path does not exist",
    fragment: "because it does not exist",
    code: Code.NotFound,
    neededBy: "aws-ebs-csi-driver / amazon-ecs-agent GetDeviceNameFromMount regexp: \"not mounted\" (stage proceeds, unstage is OK)",
  },
  {
    situation: "volume-target-path-not-mounted",
    rpc: "volume GetVolumeIDFromTargetPath",
    when: "target_path exists but is not a mount point",
    fragment: "because it does not exist",
    code: Code.NotFound,
    neededBy: "aws-ebs-csi-driver / amazon-ecs-agent regexp: as above (upstream ≤ v1.2.1 matched, master does not)",
  },
] satisfies FragmentRow[]);

const bySituation = new Map(DRIVER_FRAGMENTS.map((r) => [r.situation, r]));

/** The row of a situation. */
export function fragmentRow(situation: FragmentSituation): FragmentRow {
  return bySituation.get(situation)!;
}

/** A CsiProxyError carrying the situation it was built for (so a caller can re-word it, see IsSymlink). */
export class FragmentError extends CsiProxyError {
  readonly situation: FragmentSituation;
  constructor(situation: FragmentSituation, code: Code, message: string) {
    super(code, message);
    this.situation = situation;
  }
}

/**
 * The error of `situation`: the row's code (or `code`, for a row listing a second one) and
 * `message`, followed by ` [upstream: <fragment>]` unless `message` already contains the fragment.
 */
export function fragmentError(situation: FragmentSituation, message: string, code?: Code): FragmentError {
  const row = fragmentRow(situation);
  if (code !== undefined && code !== row.code && !row.alsoCode?.includes(code)) throw new Error(`fragment row ${situation} does not list code ${code}`);
  const text = message.includes(row.fragment) ? message : `${message} [upstream: ${row.fragment}]`;
  return new FragmentError(situation, code ?? row.code, text);
}

/** Where upstream master answers success and so do we (the clients' "already done" branches). */
export const IDEMPOTENT_SUCCESSES: readonly { rpc: string; when: string }[] = Object.freeze([
  { rpc: "filesystem PathExists", when: "the path does not exist → exists=false, no error" },
  { rpc: "filesystem Rmdir (force=true)", when: "the path does not exist" },
  { rpc: "filesystem Mkdir", when: "the directory exists" },
  { rpc: "iscsi ConnectTarget", when: "the target is already connected (whatever the credentials)" },
  { rpc: "iscsi DisconnectTarget", when: "the target is known but not connected" },
  { rpc: "iscsi GetTargetDisks", when: "the target is known but not connected → empty list" },
  { rpc: "iscsi AddTargetPortal", when: "the portal is registered" },
  { rpc: "volume MountVolume", when: "the same volume is already mounted at target_path" },
  { rpc: "volume ResizeVolume", when: "the target size is below the current partition size + 100 MiB (size 0 = the largest supported)" },
  { rpc: "disk PartitionDisk", when: "the disk is already partitioned" },
  { rpc: "disk SetDiskState", when: "the disk is already in that state" },
  { rpc: "smb NewSmbGlobalMapping", when: "local_path is already a link to this remote path (a retried call)" },
]);
