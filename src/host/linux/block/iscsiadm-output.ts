/**
 * What open-iscsi's `iscsiadm` is told and answers: the `-p` portal argument, the lines of
 * `-m discoverydb` and `--discover`, and its exit codes (open-iscsi ISCSI_ERR_*) as gRPC codes with
 * an actionable message. Pure but for one sysfs read that says whether iscsi_tcp is loaded.
 */
import * as path from "node:path";
import type { TargetPortal } from "../../../groups/iscsi/types.ts";
import { CsiProxyError, Code } from "../../../errors.ts";
import { HostCommandError } from "../../exec/run-command.ts";
import { readFileIfExists } from "../../../state/atomic-file.ts";

/** `-p` argument: `[v6]:port` for IPv6 literals, `host:port` otherwise. */
export const portalArg = (p: TargetPortal) => (p.targetAddress.includes(":") ? `[${p.targetAddress}]:${p.targetPort}` : `${p.targetAddress}:${p.targetPort}`);

/** `iscsiadm -m discoverydb` lines `<address>:<port> via sendtargets` (IPv6 unbracketed, so split at the last colon). */
export function parseDiscoveryRecords(stdout: string): TargetPortal[] {
  const portals: TargetPortal[] = [];
  for (const line of stdout.split("\n")) {
    const m = /^\[?(.+?)\]?:(\d+) via sendtargets$/.exec(line.trim());
    if (m) portals.push({ targetAddress: m[1], targetPort: Number(m[2]) });
  }
  return portals;
}

/** `--discover` output lines `<address>:<port>,<tpgt> <iqn>` → unique IQNs in order. */
export function parseDiscoveredTargets(stdout: string): string[] {
  const iqns: string[] = [];
  for (const line of stdout.split("\n")) {
    const m = /^\S+,-?\d+ (\S+)$/.exec(line.trim());
    if (m && !iqns.includes(m[1])) iqns.push(m[1]);
  }
  return iqns;
}

/**
 * A failed iscsiadm run (`what` names the operation) as a CsiProxyError: not started or timed out
 * keeps runCommand's code (DeadlineExceeded on timeout); each known exit code gets its gRPC code and
 * a hint (iscsid's hint says whether the iscsi_tcp module under `sysDir` is loaded); others keep
 * the HostCommandError's code. Anything that is not a HostCommandError goes through CsiProxyError.from.
 */
export async function iscsiadmError(err: unknown, what: string, sysDir: string): Promise<CsiProxyError> {
  if (!(err instanceof HostCommandError)) return CsiProxyError.from(err);
  if (err.exitCode === null) {
    const code = err.timedOut ? Code.DeadlineExceeded : Code.FailedPrecondition;
    const hint = /not installed/.test(err.message) ? " (install open-iscsi)" : "";
    return new CsiProxyError(code, `${what}: ${err.message}${hint}`, { cause: err });
  }
  const tcpLoaded = (await readFileIfExists(path.join(sysDir, "module", "iscsi_tcp", "initstate")).catch(() => null)) !== null;
  let code: Code = err.code;
  let hint = "";
  switch (err.exitCode) {
    case 12: // ISCSI_ERR_TRANS_NOT_FOUND
      code = Code.FailedPrecondition;
      hint = "the iSCSI tcp transport is not available: load the iscsi_tcp kernel module";
      break;
    case 18: // ISCSI_ERR_ISCSID_COMM_ERR
    case 20: // ISCSI_ERR_ISCSID_NOTCONN
      code = Code.FailedPrecondition;
      hint = `iscsid is not reachable: start iscsid${tcpLoaded ? "" : " (it needs the iscsi_tcp kernel module, which is not loaded)"}`;
      break;
    case 21: // ISCSI_ERR_NO_OBJS_FOUND
      code = Code.NotFound;
      break;
    case 13: // ISCSI_ERR_ACCESS
    case 24: // ISCSI_ERR_LOGIN_AUTH_FAILED
      code = Code.PermissionDenied;
      hint = err.exitCode === 24 ? "the target rejected the CHAP credentials" : "";
      break;
    case 4: // ISCSI_ERR_TRANS
    case 8: // ISCSI_ERR_TRANS_TIMEOUT
    case 11: // ISCSI_ERR_PDU_TIMEOUT
      code = Code.FailedPrecondition; // final for this call, not "still in progress" (compat/driver-fragments.ts)
      hint = "the portal could not be reached";
      break;
    case 5: // ISCSI_ERR_LOGIN
    case 19: // ISCSI_ERR_FATAL_LOGIN
      code = Code.FailedPrecondition;
      hint = "the target refused the login";
      break;
    case 15: // ISCSI_ERR_SESS_EXISTS
      code = Code.AlreadyExists;
      break;
    case 7: // ISCSI_ERR_INVAL
      code = Code.InvalidArgument;
      break;
  }
  return new CsiProxyError(code, `${what}: ${hint ? `${hint}: ` : ""}${err.message}`, { cause: err });
}
