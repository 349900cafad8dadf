/**
 * The gRPC code and message of an error a PowerShell worker reports for a failed op (CIM
 * exceptions, cmdlet errors, failed CIM method return values): {@link WorkerError}, chosen by
 * {@link mapWorkerError}. Host-specific refinements (Windows error numbers, secrets removed) are in
 * worker-errors.ts.
 */
import { CsiProxyError, Code } from "../../../errors.ts";
import { STORAGE_STATUS } from "./storage-status.ts";

/** What a worker reports for a failed op (scripts/worker-script.ts, ErrorInfo). */
export interface WorkerErrorInfo {
  message?: string;
  type?: string;
  category?: string;
  fqid?: string;
  kind?: string;
  returnValue?: number;
  native?: string;
  statusCode?: number;
  hresult?: number;
  /** From a CimException's ErrorData (MSFT_StorageExtendedStatus / MSFT_WmiError), e.g. "StorageWMI 42002". */
  MessageId?: string;
  error_Code?: string;
}

/** A Storage Management API status carried by a thrown error instead of a ReturnValue ("StorageWMI 42002,New-Partition"). */
function storageStatus(info: WorkerErrorInfo): number | undefined {
  for (const text of [info.MessageId, info.fqid]) {
    const m = /StorageWMI (\d+)/.exec(text ?? "");
    if (m) return Number(m[1]);
  }
  return undefined;
}

/** A failed op: the worker's error details plus the gRPC code chosen from them. */
export class WorkerError extends CsiProxyError {
  override name = "WorkerError";
  readonly op: string;
  readonly info: WorkerErrorInfo;
  constructor(op: string, info: WorkerErrorInfo) {
    const [code, text] = mapWorkerError(info);
    super(code, `${op}: ${text}`);
    this.op = op;
    this.info = info;
  }
}

/**
 * gRPC code for a CIM method's non-zero ReturnValue or StorageWMI status: the Storage Management
 * API's documented codes (storage-status.ts); any other code the provider reports is FailedPrecondition with the number in
 * the message (like upstream's `code=<n>`): the host refused, not csi-proxy erred; 0 (success taken
 * for a failure) is Internal, csi-proxy's own bug.
 */
export function codeForReturnValue(rv: number): Code {
  if (rv === 0) return Code.Internal;
  return STORAGE_STATUS[rv]?.code ?? Code.FailedPrecondition;
}

/** The message with the documented meaning of a Storage Management API code appended. */
function withStatusText(message: string, rv: number): string {
  const text = STORAGE_STATUS[rv]?.text;
  return text && !message.includes(text) ? `${message} (${text})` : message;
}

const nativeCodes: Record<string, Code> = {
  NotFound: Code.NotFound,
  AccessDenied: Code.PermissionDenied,
  InvalidParameter: Code.InvalidArgument,
  InvalidQuery: Code.InvalidArgument,
  NotSupported: Code.Unimplemented,
  AlreadyExists: Code.AlreadyExists,
  ServerIsShuttingDown: Code.Unavailable,
  ServerLimitsExceeded: Code.ResourceExhausted,
};

const categoryCodes: Record<string, Code> = {
  ObjectNotFound: Code.NotFound,
  PermissionDenied: Code.PermissionDenied,
  InvalidArgument: Code.InvalidArgument,
  InvalidData: Code.InvalidArgument,
  ResourceExists: Code.AlreadyExists,
  ResourceBusy: Code.FailedPrecondition,
  ResourceUnavailable: Code.FailedPrecondition, // a final failure of the call, not "still in progress" (compat/driver-fragments.ts)
  OperationTimeout: Code.DeadlineExceeded,
  NotImplemented: Code.Unimplemented,
  NotEnabled: Code.FailedPrecondition,
  LimitsExceeded: Code.ResourceExhausted,
};

/** Chooses the gRPC code and message of a worker error: script kind, method return value (or StorageWMI status), CIM native code, then the PowerShell category; Internal only for what points at csi-proxy's own script (docs/reliability.md "Internal policy"). */
export function mapWorkerError(info: WorkerErrorInfo): [Code, string] {
  const message = (info.message ?? "PowerShell error").trim();
  if (info.kind === "NotFound") return [Code.NotFound, message];
  if (info.kind === "UnknownOp") return [Code.Internal, message];
  if (info.kind === "FailedPrecondition") return [Code.FailedPrecondition, message]; // the script's refusal of facts that changed since the write was decided (Unchanged)
  if (typeof info.returnValue === "number" && info.returnValue !== 0) return [codeForReturnValue(info.returnValue), withStatusText(message, info.returnValue)];
  const status = storageStatus(info);
  if (status !== undefined) return [codeForReturnValue(status), withStatusText(message, status)];
  if (info.native && nativeCodes[info.native] !== undefined) return [nativeCodes[info.native], message];
  if (info.category && categoryCodes[info.category] !== undefined) return [categoryCodes[info.category], message];
  // A CIM error the provider raised (a native code, e.g. "Failed"): the host's failure. Anything else
  // (a PowerShell runtime error in the worker script, no information at all) is csi-proxy's bug.
  if (info.native) return [Code.FailedPrecondition, message];
  return [Code.Internal, message];
}
