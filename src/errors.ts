/**
 * gRPC status codes, numbered as on the wire. Defined here so that group services and host code
 * can choose a code where a problem is detected without depending on a gRPC library.
 */
export const Code = {
  OK: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

/** grpc-go's `codes.Code.String()` names (code 1 is `Canceled`), as Prometheus labels, logs and csi-proxyctl print them. */
export const codeName = (code: number): string =>
  (Object.keys(Code) as (keyof typeof Code)[]).find((k) => Code[k] === code) ?? `Code(${code})`;

/**
 * The one error type of the project: a message for the caller plus the gRPC code chosen where the
 * problem was detected. The RPC boundary turns it into a gRPC status as is; anything else thrown
 * becomes Internal there.
 */
export class CsiProxyError extends Error {
  override name = "CsiProxyError";
  readonly code: Code;
  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
  /**
   * Turns any thrown value into a CsiProxyError, keeping coded errors and the original as cause. A
   * system call's failure (an Error with an errno name such as ENOSPC) is the host's condition, not
   * a bug of csi-proxy: it gets the errno's code ({@link errnoCode}); anything else gets `code`.
   */
  static from(reason: unknown, code: Code = Code.Internal): CsiProxyError {
    if (reason instanceof CsiProxyError) return reason;
    const message = reason instanceof Error ? reason.message : String(reason);
    const errno = reason instanceof Error ? (reason as NodeJS.ErrnoException).code : undefined;
    return new CsiProxyError((typeof errno === "string" && errnoCode(errno)) || code, message, { cause: reason });
  }
}

/**
 * What a system call on a mount whose filesystem server is gone or unreachable fails with: a FUSE
 * daemon killed (ENOTCONN, ECONNABORTED for requests in flight), an NFS handle gone (ESTALE), an SMB
 * or NFS server down (EHOSTDOWN, EHOSTUNREACH). Unavailable: the mount may answer again.
 */
export const DEAD_MOUNT_ERRNOS: ReadonlySet<string> = new Set(["ENOTCONN", "ECONNABORTED", "ESTALE", "EHOSTDOWN", "EHOSTUNREACH"]);

/**
 * The gRPC code of a failed system call, by errno name; undefined for names that are not errnos
 * (Node's own ERR_* codes) or that usually mean a bug of csi-proxy (EINVAL, EBADF, EFAULT).
 * The daemon's own descriptors or memory exhausted → ResourceExhausted (transient); a missing file →
 * NotFound; access → PermissionDenied; a filesystem whose server is gone ({@link DEAD_MOUNT_ERRNOS}) →
 * Unavailable, as a mount the gate finds not responding (host/mount-gate.ts); the rest (disk full or
 * over quota — a final answer until someone frees space, and kubelet reads ResourceExhausted as "still
 * in progress" —, busy, read-only, I/O error, device gone…) → FailedPrecondition.
 */
export function errnoCode(errno: string): Code | undefined {
  if (!/^E[A-Z0-9]+$/.test(errno) || errno === "EINVAL" || errno === "EBADF" || errno === "EFAULT") return undefined;
  if (DEAD_MOUNT_ERRNOS.has(errno)) return Code.Unavailable;
  switch (errno) {
    case "EMFILE":
    case "ENFILE":
    case "ENOMEM":
      return Code.ResourceExhausted;
    case "ENOENT":
      return Code.NotFound;
    case "EEXIST":
      return Code.AlreadyExists;
    case "EACCES":
    case "EPERM":
      return Code.PermissionDenied;
    case "ENAMETOOLONG":
      return Code.InvalidArgument;
    default:
      return Code.FailedPrecondition;
  }
}

/** Quotes request data for an error message, cut to `max` characters so a huge input never makes a huge status. */
export function quote(value: string, max = 256): string {
  return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
}

export const invalidArgument = (message: string) => new CsiProxyError(Code.InvalidArgument, message);
export const notFound = (message: string) => new CsiProxyError(Code.NotFound, message);
export const alreadyExists = (message: string) => new CsiProxyError(Code.AlreadyExists, message);
export const failedPrecondition = (message: string) => new CsiProxyError(Code.FailedPrecondition, message);
export const permissionDenied = (message: string) => new CsiProxyError(Code.PermissionDenied, message);
export const unimplemented = (message: string) => new CsiProxyError(Code.Unimplemented, message);
export const unavailable = (message: string) => new CsiProxyError(Code.Unavailable, message);
export const internal = (message: string, cause?: unknown) => new CsiProxyError(Code.Internal, message, { cause });
