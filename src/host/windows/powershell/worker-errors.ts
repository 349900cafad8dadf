/**
 * Error handling shared by the SMB, iSCSI and System hosts on Windows: secrets removed from any
 * error text, and the Windows error number a worker error carries (so that a host can choose a
 * gRPC code better than the generic CIM mapping of worker-error-codes.ts).
 */
import { CsiProxyError, Code } from "../../../errors.ts";
import { redactWhole } from "../../../log/redact.ts";
import { WorkerError, type WorkerErrorInfo } from "./worker-error-codes.ts";

/** `text` with every whole occurrence of each non-empty secret replaced by `***` (src/log/redact.ts). */
export function redact(text: string, secrets: readonly string[]): string {
  return redactWhole(text, secrets);
}

/**
 * A coded error safe to return and log: the message with the secrets removed. When a secret had to
 * be removed, the original error is NOT kept as `cause` (a logger printing causes would show it).
 */
export function scrubbed(err: unknown, secrets: readonly string[], code?: Code): CsiProxyError {
  const e = CsiProxyError.from(err);
  const message = redact(e.message, secrets);
  if (message === e.message && code === undefined) return e;
  return new CsiProxyError(code ?? e.code, message, message === e.message ? { cause: err } : undefined);
}

/**
 * The Windows error number a worker error carries, if any: `Windows System Error <n>` in the
 * FullyQualifiedErrorId (what SMB cmdlets report), an `HRESULT 0x…` there, a failed method's
 * ReturnValue, a Win32-facility HRESULT (0x8007xxxx → xxxx), or a numeric `error_Code` of the CIM
 * error data. HRESULTs other than 0x8007xxxx are returned whole (unsigned), e.g. 0xEFFF0009.
 */
export function windowsErrorOf(info: WorkerErrorInfo): number | undefined {
  const fqid = info.fqid ?? "";
  let m = /Windows System Error (\d+)/i.exec(fqid);
  if (m) return Number(m[1]);
  m = /HRESULT 0x([0-9a-f]{1,8})/i.exec(fqid);
  if (m) return fromHresult(parseInt(m[1], 16));
  if (typeof info.returnValue === "number" && info.returnValue !== 0) return fromHresult(info.returnValue >>> 0);
  if (info.error_Code !== undefined && /^\d+$/.test(info.error_Code)) return fromHresult(Number(info.error_Code) >>> 0);
  if (typeof info.hresult === "number" && (info.hresult >>> 16) === 0x8007) return info.hresult & 0xffff;
  return undefined;
}

const fromHresult = (h: number) => ((h >>> 16) === 0x8007 ? h & 0xffff : h >>> 0);

/**
 * Re-codes a failed worker call: `codeFor` picks a code from the Windows error number (undefined
 * keeps the pool's choice); secrets are removed from the message in every case.
 */
export function recode(err: unknown, codeFor: (n: number, info: WorkerErrorInfo) => Code | undefined, secrets: readonly string[] = []): CsiProxyError {
  if (err instanceof WorkerError) {
    const n = windowsErrorOf(err.info);
    const code = n === undefined ? undefined : codeFor(n, err.info);
    return scrubbed(err, secrets, code);
  }
  return scrubbed(err, secrets);
}
