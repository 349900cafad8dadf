import { CsiProxyError, Code, errnoCode } from "../errors.ts";

const codes: Record<string, Code> = {
  ENOENT: Code.NotFound,
  EEXIST: Code.AlreadyExists,
  ENOTEMPTY: Code.FailedPrecondition,
  ENOTDIR: Code.FailedPrecondition,
  EISDIR: Code.FailedPrecondition,
  EBUSY: Code.FailedPrecondition,
  EACCES: Code.PermissionDenied,
  EPERM: Code.PermissionDenied,
  EROFS: Code.FailedPrecondition,
  ENAMETOOLONG: Code.InvalidArgument,
  EINVAL: Code.InvalidArgument,
  ELOOP: Code.FailedPrecondition,
};

/** Maps a Node fs error to a coded error: `<what> <path>: <reason>` with the errno's gRPC code. */
export function fsError(err: unknown, what: string, path: string): CsiProxyError {
  const e = err as NodeJS.ErrnoException;
  const code = (e?.code ? (codes[e.code] ?? errnoCode(e.code)) : undefined) ?? Code.Internal;
  const reason = e?.code ? `${e.code}: ${describe(e.code)}` : String(err);
  return new CsiProxyError(code, `${what} ${path}: ${reason}`, { cause: err });
}

function describe(errno: string): string {
  switch (errno) {
    case "ENOENT": return "no such file or directory";
    case "EEXIST": return "already exists";
    case "ENOTEMPTY": return "directory not empty";
    case "ENOTDIR": return "not a directory";
    case "EISDIR": return "is a directory";
    case "EACCES": case "EPERM": return "permission denied";
    case "EBUSY": return "resource busy (mounted?)";
    case "ENOSPC": return "no space left on device";
    default: return errno.toLowerCase();
  }
}
