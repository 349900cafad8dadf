import { CsiProxyError } from "../../errors.ts";
import { win32Message, WinError } from "../../win32/win32-errors.ts";
import { fsError } from "../fs-error.ts";

/**
 * The Win32 error behind a Node fs error code on Windows (libuv folds several Win32 codes into one
 * errno name; this is the one Go's os reports for the same failure).
 */
const win32ForNode: Record<string, number> = {
  ENOENT: WinError.FILE_NOT_FOUND,
  ENOTEMPTY: 145, // ERROR_DIR_NOT_EMPTY
  EEXIST: 183, // ERROR_ALREADY_EXISTS
  EPERM: WinError.ACCESS_DENIED,
  EACCES: WinError.ACCESS_DENIED,
  ENOTDIR: 267, // ERROR_DIRECTORY
  EBUSY: 32, // ERROR_SHARING_VIOLATION
  ENAMETOOLONG: 206, // ERROR_FILENAME_EXCED_RANGE
  EINVAL: 87, // ERROR_INVALID_PARAMETER
};

/**
 * A Node fs error on Windows as Go's os prints it: `<op> <path>: <Windows' system message>`, with
 * the gRPC code fsError gives the errno (NotFound, FailedPrecondition…). Never carries a Node errno
 * name; an errno without a Windows counterpart here reads `the host call failed` (cause kept).
 */
export function windowsFsError(err: unknown, op: string, path: string): CsiProxyError {
  const coded = fsError(err, op, path);
  const errno = (err as NodeJS.ErrnoException)?.code;
  const win = errno !== undefined ? win32ForNode[errno] : undefined;
  const text = (win !== undefined && win32Message(win)) || "the host call failed";
  return new CsiProxyError(coded.code, `${op} ${path}: ${text}`, { cause: err });
}
