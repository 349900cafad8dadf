/**
 * Rows of the v1.3.0 recording that show Wine's WMI, not upstream. v1.3.0 asks WMI (COM, in the
 * server's own process: no process start to record) where v1.1.3 ran PowerShell, and Wine's WMI has
 * no storage, SMB or iSCSI classes; ours, under Wine, finds no PowerShell. Such a row compares Wine
 * with Wine, so it is not compared. A row is one only when all three hold:
 *
 * 1. the same request made v1.1.3 start PowerShell (`powershell` in its recording): it passed
 *    upstream's own checks and reached the host layer (v1.3.0 keeps those checks: a v1.3.0 check
 *    text fails rule 3);
 * 2. ours did not refuse the request by its own checks: it answered OK or with an error its host
 *    layer formed (under Wine: no PowerShell worker, or the harness's empty host), never with
 *    InvalidArgument or PermissionDenied, the codes of our request checks (a stricter check of ours
 *    stays compared, so it stays visible);
 * 3. v1.3.0's answer is one WMI gives under Wine: a COM/WMI failure (`failed to connect to WMI`,
 *    the undescribed COM error 2147614729 = DISP_E_EXCEPTION, the cim package's `Not Found` or
 *    `failed to create iSCSI target portal with map[…]`) or a success whose lists are all empty
 *    (no instances).
 * Answers v1.3.0 forms without WMI (Win32 calls: `not a mounted folder`, `File not found.`, the
 * disk-by-page83 scan) fail rule 3 and stay compared.
 */
import { Code } from "../../src/errors.ts";
import type { RecordedRow } from "./compare.ts";
import type { Answer } from "./oracle-run.ts";

const WMI_FAILURE = /failed to connect to WMI|error 2147614729 \(FormatMessage failed|(: |error |err=)Not Found$|failed to create iSCSI target portal with map\[/;

const allEmpty = (v: Record<string, unknown>) =>
  Object.values(v).every((x) => (Array.isArray(x) ? x.length === 0 : x !== null && typeof x === "object" ? Object.keys(x).length === 0 : false));

const refusedByOwnChecks = (ours: Answer | undefined) =>
  ours === undefined || !("ok" in ours) && (!("code" in ours) || ours.code === Code.InvalidArgument || ours.code === Code.PermissionDenied);

/** Whether `row` (v1.3.0) shows Wine's WMI; `older` is the v1.1.3 row of the same request, `ours` our answer. */
export function shownByWineWmi(row: RecordedRow, older: RecordedRow | undefined, ours: Answer | undefined): boolean {
  if (older?.powershell !== true || refusedByOwnChecks(ours)) return false;
  if (row.ok !== undefined) return Object.keys(row.ok).length > 0 && allEmpty(row.ok);
  return row.message !== undefined && WMI_FAILURE.test(row.message);
}
