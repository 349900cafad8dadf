/**
 * Win32 error codes: the ones csi-proxy relies on (winerror.h), their Windows messages, the gRPC code
 * each maps to, and {@link Win32Error}, the error a failed Win32 call throws.
 */
import { CsiProxyError, Code } from "../errors.ts";

/** Win32 error codes this code relies on (winerror.h). */
export const WinError = {
  SUCCESS: 0,
  INVALID_FUNCTION: 1,
  FILE_NOT_FOUND: 2,
  PATH_NOT_FOUND: 3,
  ACCESS_DENIED: 5,
  INVALID_HANDLE: 6,
  NO_MORE_FILES: 18,
  NOT_READY: 21,
  SHARING_VIOLATION: 32,
  NOT_SUPPORTED: 50,
  INVALID_PARAMETER: 87,
  CALL_NOT_IMPLEMENTED: 120,
  INSUFFICIENT_BUFFER: 122,
  INVALID_NAME: 123,
  DIR_NOT_EMPTY: 145,
  ALREADY_EXISTS: 183,
  FILENAME_EXCED_RANGE: 206,
  PIPE_BUSY: 231,
  MORE_DATA: 234,
  DIRECTORY: 267,
  INVALID_SECURITY_DESCR: 1338,
  INVALID_OWNER: 1307,
  NONE_MAPPED: 1332,
  FAILED_SERVICE_CONTROLLER_CONNECT: 1063,
  NOT_A_REPARSE_POINT: 4390,
  // Service Control Manager (src/win32-service/scm.ts)
  DEPENDENT_SERVICES_RUNNING: 1051,
  INVALID_SERVICE_CONTROL: 1052,
  SERVICE_REQUEST_TIMEOUT: 1053,
  SERVICE_NO_THREAD: 1054,
  SERVICE_DATABASE_LOCKED: 1055,
  SERVICE_ALREADY_RUNNING: 1056,
  SERVICE_DISABLED: 1058,
  CIRCULAR_DEPENDENCY: 1059,
  SERVICE_DOES_NOT_EXIST: 1060,
  SERVICE_CANNOT_ACCEPT_CTRL: 1061,
  SERVICE_NOT_ACTIVE: 1062,
  SERVICE_DEPENDENCY_FAIL: 1068,
  SERVICE_LOGON_FAILED: 1069,
  SERVICE_START_HANG: 1070,
  SERVICE_MARKED_FOR_DELETE: 1072,
  SERVICE_DEPENDENCY_DELETED: 1075,
} as const;

const messages: Record<number, string> = {
  1: "Incorrect function.",
  2: "The system cannot find the file specified.",
  3: "The system cannot find the path specified.",
  5: "Access is denied.",
  6: "The handle is invalid.",
  21: "The device is not ready.",
  32: "The process cannot access the file because it is being used by another process.",
  50: "The request is not supported.",
  87: "The parameter is incorrect.",
  120: "This function is not supported on this system.",
  122: "The data area passed to a system call is too small.",
  123: "The filename, directory name, or volume label syntax is incorrect.",
  145: "The directory is not empty.",
  183: "Cannot create a file when that file already exists.",
  206: "The filename or extension is too long.",
  231: "All pipe instances are busy.",
  267: "The directory name is invalid.",
  1338: "The security descriptor structure is invalid.",
  1307: "This security ID may not be assigned as the owner of this object.",
  1332: "No mapping between account names and security IDs was done.",
  1063: "The service process could not connect to the service controller.",
  1051: "A stop control has been sent to a service that other running services are dependent on.",
  1052: "The requested control is not valid for this service.",
  1053: "The service did not respond to the start or control request in a timely fashion.",
  1054: "A thread could not be created for the service.",
  1055: "The service database is locked.",
  1056: "An instance of the service is already running.",
  1058: "The service cannot be started, either because it is disabled or because it has no enabled devices associated with it.",
  1059: "Circular service dependency was specified.",
  1060: "The specified service does not exist as an installed service.",
  1061: "The service cannot accept control messages at this time.",
  1062: "The service has not been started.",
  1068: "The dependency service or group failed to start.",
  1069: "The service did not start due to a logon failure.",
  1070: "After starting, the service hung in a start-pending state.",
  1072: "The specified service has been marked for deletion.",
  1075: "The dependency service does not exist or has been marked for deletion.",
  1314: "A required privilege is not held by the client.",
  4390: "The file or directory is not a reparse point.",
};

/** Windows' system message (FormatMessage, en-US) for a Win32 error code, when this table has it. */
export function win32Message(errno: number): string | undefined {
  return messages[errno];
}

/** Win32 error codes by the gRPC code they map to; any other code is FailedPrecondition. */
const CODE_OF_WIN32: ReadonlyMap<number, Code> = new Map(
  ([
    [Code.NotFound, [WinError.FILE_NOT_FOUND, WinError.PATH_NOT_FOUND, WinError.NOT_A_REPARSE_POINT, WinError.SERVICE_DOES_NOT_EXIST]],
    [Code.PermissionDenied, [WinError.ACCESS_DENIED, 1314 /* ERROR_PRIVILEGE_NOT_HELD */]],
    [Code.AlreadyExists, [WinError.ALREADY_EXISTS, WinError.SERVICE_ALREADY_RUNNING]],
    [Code.InvalidArgument, [WinError.INVALID_PARAMETER, WinError.INVALID_NAME, WinError.FILENAME_EXCED_RANGE, WinError.INVALID_SECURITY_DESCR]],
    [Code.DeadlineExceeded, [WinError.SERVICE_REQUEST_TIMEOUT, WinError.SERVICE_START_HANG]],
    [Code.Unimplemented, [WinError.NOT_SUPPORTED, WinError.CALL_NOT_IMPLEMENTED]],
    [Code.Unavailable, [WinError.PIPE_BUSY]],
  ] as const).flatMap(([code, errnos]) => errnos.map((errno) => [errno, code] as const)),
);

/**
 * gRPC code for a Win32 error code. FailedPrecondition for the rest: a busy or not-empty object, a
 * service state that forbids the request, and the SCM's "try later" codes (CANNOT_ACCEPT_CTRL,
 * DATABASE_LOCKED, NO_THREAD: final for this call, compat/driver-fragments.ts on "in progress" codes),
 * and any code not named here (the host's failure, named by its Win32 message and number).
 */
export function codeForWin32(errno: number): Code {
  return CODE_OF_WIN32.get(errno) ?? Code.FailedPrecondition;
}

/** A failed Win32 call: `<what>: <Windows message> (win32 error <n>)`, with the code mapped by {@link codeForWin32}. */
export class Win32Error extends CsiProxyError {
  override name = "Win32Error";
  readonly errno: number;
  constructor(what: string, errno: number) {
    super(codeForWin32(errno), `${what}: ${messages[errno] ?? "Windows error"} (win32 error ${errno})`);
    this.errno = errno;
  }
}
