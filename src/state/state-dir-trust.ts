/**
 * What securing the state directory yields, shared by the Linux check (state-dir.ts) and the
 * Windows one (state-dir-windows.ts): per area, whether its state may be used, and the refusal.
 */
import { Code, CsiProxyError } from "../errors.ts";

/** Who uses which part of the state directory. */
export type StateArea = "smb" | "iscsi";

export interface StateDirLog {
  info(msg: string): void;
  warning(msg: string): void;
}

/** FailedPrecondition for a refused state directory or file; logged once by the start-up step. */
export class StateDirRefusal extends CsiProxyError {
  override name = "StateDirRefusal";
  constructor(message: string) {
    super(Code.FailedPrecondition, message);
  }
}

/** The outcome: per area, null when its state may be used, else the error every use answers with. */
export interface StateDirTrust {
  readonly dir: string;
  readonly smb: CsiProxyError | null;
  readonly iscsi: CsiProxyError | null;
}

/** State files, relative to the state directory, per platform (checked at start-up). */
export const STATE_FILES = {
  linux: ["smb-mappings.json", "iscsi/mutual-chap-secret"],
  win32: ["smb-mappings.json"],
} as const;
