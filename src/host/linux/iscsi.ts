/**
 * iSCSI on Linux through open-iscsi (docs/upstream-behaviour.md, iSCSI, mapped onto iscsiadm):
 * - a registered target portal is a sendtargets discovery record
 *   (`iscsiadm -m discoverydb -t sendtargets -p <portal> -o new|delete`, listed by `-m discoverydb`);
 * - discovery is `-m discoverydb ... --discover`, which also creates the node records of the
 *   offered targets (what makes a target "known", like Windows' MSFT_iSCSITarget);
 * - connect/disconnect are `-m node -T <iqn> -p <portal> --login|--logout` (the node's
 *   `node.startup` stays `manual`: sessions are not persistent, as upstream);
 * - sessions and their disks are read from sysfs (/sys/class/iscsi_session, no process).
 *
 * CHAP secrets never go on argv: they are written into the node record files by this daemon
 * (iscsi-node-records.ts), and iscsiadm hands the record to iscsid over its local socket at login.
 * iscsiadm's output and exit codes are read by iscsiadm-output.ts, sysfs by iscsi-sysfs.ts.
 *
 * Mutual CHAP: SetMutualChapSecret is node-global on Windows; open-iscsi only has per-record
 * incoming credentials. The secret is kept in `<state-dir>/iscsi/mutual-chap-secret` (0600) and
 * written as `password_in` when a target is connected with MUTUAL_CHAP. open-iscsi also checks
 * the name the target answers with (`username_in`), which the API has no field for; the target's
 * IQN is used (what targets send by default when no mutual user name is configured). The secret
 * is read only from a regular file owned by csi-proxy's uid (readStateFile: O_NOFOLLOW + fstat);
 * when the start-up check of the state directory refused it (src/state/state-dir.ts), both mutual
 * CHAP operations answer that FailedPrecondition instead.
 *
 * Disk numbers follow the disk group's numbering (src/host/linux/block/disk-numbers.ts `diskNumberOf`):
 * the block device's dev_t as (major << 20) | minor.
 */
import * as path from "node:path";
import type { IscsiHostApi } from "../../groups/iscsi/host-api.ts";
import type { AuthenticationType, TargetPortal } from "../../groups/iscsi/types.ts";
import { CsiProxyError, Code } from "../../errors.ts";
import { runCommand } from "../exec/run-command.ts";
import { readFileIfExists, readStateFile, removeFileDurablyIn, writeFileAtomicIn } from "../../state/atomic-file.ts";
import { withStateDir, type StateDirHandle } from "../../state/state-subdir.ts";
import { callSignal } from "../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../util/stop-if-aborted.ts";
import { iscsiadmError, parseDiscoveredTargets, parseDiscoveryRecords, portalArg } from "./block/iscsiadm-output.ts";
import { removeLeftoverRecordCopies, setRecordAuth } from "./block/iscsi-node-records.ts";
import { iscsiSessions, sessionDisks } from "./block/iscsi-sysfs.ts";
import { findNodeDatabase } from "./block/iscsi-node-db.ts";

/** The mutual CHAP secret's name in `<state-dir>/iscsi`. */
const MUTUAL_FILE = "mutual-chap-secret";

export interface LinuxIscsiHostOptions {
  /** The daemon's state directory (`-state-dir`): holds the mutual CHAP secret. */
  stateDir: string;
  /** The iscsiadm program (default `iscsiadm` on the fixed system PATH). */
  iscsiadm?: string;
  /** open-iscsi's node database, as given (tests); default: found from the installed open-iscsi (iscsi-node-db.ts). */
  nodesDir?: string;
  /** `-iscsi-node-db`: the node database, overriding what the installed open-iscsi says. */
  nodeDbOverride?: string;
  /** sysfs mount point (default /sys; tests use a fake tree). */
  sysDir?: string;
  /** Bound for one iscsiadm run (default 180 s: a login retries for up to 120 s by default). */
  timeoutMs?: number;
  /** Set when the start-up check refused the state directory's iSCSI part: mutual CHAP answers it. */
  stateRefusal?: CsiProxyError | null;
}

export class LinuxIscsiHost implements IscsiHostApi {
  readonly #iscsiadm: string;
  readonly #nodesDir: string;
  readonly #sys: string;
  readonly #timeoutMs: number;
  readonly #stateDir: string;
  readonly #mutualFile: string;
  readonly #stateRefusal: CsiProxyError | null;

  constructor(options: LinuxIscsiHostOptions) {
    this.#iscsiadm = options.iscsiadm ?? "iscsiadm";
    this.#nodesDir = path.resolve(options.nodesDir ?? findNodeDatabase({ override: options.nodeDbOverride }).dir);
    this.#sys = options.sysDir ?? "/sys";
    this.#timeoutMs = options.timeoutMs ?? 180_000;
    this.#stateDir = options.stateDir;
    this.#mutualFile = path.join(options.stateDir, "iscsi", "mutual-chap-secret");
    this.#stateRefusal = options.stateRefusal ?? null;
  }

  /** The node database in use (logged at start-up). */
  get nodesDir(): string {
    return this.#nodesDir;
  }

  /** The start-up sweep of node record copies a killed daemon left (iscsi-node-records.ts `removeLeftoverRecordCopies`). */
  removeLeftoverRecordCopies(): Promise<{ removed: string[]; failed: string[] }> {
    return removeLeftoverRecordCopies(this.#nodesDir);
  }

  async #run(what: string, args: string[], options: { ok?: number[]; redact?: string[] } = {}) {
    try {
      return await runCommand(this.#iscsiadm, args, { timeoutMs: this.#timeoutMs, okExitCodes: options.ok ?? [0], redact: options.redact });
    } catch (err) {
      throw await iscsiadmError(err, what, this.#sys);
    }
  }

  async listTargetPortals(): Promise<TargetPortal[]> {
    const { stdout, exitCode } = await this.#run("list target portals", ["-m", "discoverydb"], { ok: [0, 21] });
    return exitCode === 21 ? [] : parseDiscoveryRecords(stdout);
  }

  async addTargetPortal(portal: TargetPortal): Promise<void> {
    await this.#run(`add target portal ${portalArg(portal)}`, ["-m", "discoverydb", "-t", "sendtargets", "-p", portalArg(portal), "-o", "new"]);
  }

  async removeTargetPortal(portal: TargetPortal): Promise<void> {
    await this.#run(`remove target portal ${portalArg(portal)}`, ["-m", "discoverydb", "-t", "sendtargets", "-p", portalArg(portal), "-o", "delete"]);
  }

  async discoverTargets(portal: TargetPortal): Promise<string[]> {
    const { stdout, exitCode } = await this.#run(`discover target portal ${portalArg(portal)}`, ["-m", "discoverydb", "-t", "sendtargets", "-p", portalArg(portal), "--discover"], {
      ok: [0, 21],
    });
    return exitCode === 21 ? [] : parseDiscoveredTargets(stdout);
  }

  async getTarget(portal: TargetPortal, iqn: string): Promise<{ connected: boolean } | null> {
    const { exitCode } = await this.#run(`look up target ${iqn}`, ["-m", "node", "-T", iqn, "-p", portalArg(portal)], { ok: [0, 21] });
    if (exitCode === 21) return null;
    return { connected: (await iscsiSessions(this.#sys, portal, iqn)).length > 0 };
  }

  async connectTarget(portal: TargetPortal, iqn: string, auth: { type: AuthenticationType; chapUsername: string; chapSecret: string }): Promise<void> {
    const lines: [string, string][] = [["node.session.auth.authmethod", auth.type === "NONE" ? "None" : "CHAP"]];
    const redact = [auth.chapSecret];
    if (auth.type !== "NONE") {
      lines.push(["node.session.auth.username", auth.chapUsername || (await this.#initiatorName())]);
      lines.push(["node.session.auth.password", auth.chapSecret]);
    }
    if (auth.type === "MUTUAL_CHAP") {
      if (this.#stateRefusal) throw this.#stateRefusal;
      const mutual = (await this.#inIscsiState((dir) => readStateFile(dir.at(MUTUAL_FILE), { shown: this.#mutualFile }))) ?? "";
      if (mutual === "") throw new CsiProxyError(Code.FailedPrecondition, "mutual CHAP needs the initiator's mutual CHAP secret: call SetMutualChapSecret first");
      redact.push(mutual);
      lines.push(["node.session.auth.username_in", iqn], ["node.session.auth.password_in", mutual]);
    }
    stopIfAborted(callSignal(), { before: `setting the authentication of ${iqn} at ${portalArg(portal)}`, done: NOTHING_CHANGED });
    await setRecordAuth(this.#nodesDir, portal, iqn, lines);
    stopIfAborted(callSignal(), {
      before: `logging in to ${iqn} at ${portalArg(portal)}`,
      done: `the node records of ${iqn} at ${portalArg(portal)} hold the requested authentication settings; no session was started`,
    });
    await this.#run(`log in to ${iqn} at ${portalArg(portal)}`, ["-m", "node", "-T", iqn, "-p", portalArg(portal), "--login"], { ok: [0, 15], redact });
  }

  async disconnectTarget(portal: TargetPortal, iqn: string): Promise<void> {
    await this.#run(`log out of ${iqn} at ${portalArg(portal)}`, ["-m", "node", "-T", iqn, "-p", portalArg(portal), "--logout"], { ok: [0, 21] });
  }

  async getTargetDisks(portal: TargetPortal, iqn: string): Promise<string[]> {
    return sessionDisks(this.#sys, await iscsiSessions(this.#sys, portal, iqn));
  }

  async setMutualChapSecret(secret: string): Promise<void> {
    if (this.#stateRefusal) throw this.#stateRefusal;
    await this.#inIscsiState((dir) => (secret === "" ? removeFileDurablyIn(dir, MUTUAL_FILE) : writeFileAtomicIn(dir, MUTUAL_FILE, secret, { mode: 0o600 })));
  }

  /** `fn` with `<state-dir>/iscsi` held, walked without following links (src/state/state-subdir.ts). */
  #inIscsiState<T>(fn: (dir: StateDirHandle) => Promise<T>): Promise<T> {
    return withStateDir(this.#stateDir, ["iscsi"], fn, { createMode: 0o700 });
  }

  async #initiatorName(): Promise<string> {
    const text = (await readFileIfExists("/etc/iscsi/initiatorname.iscsi")) ?? "";
    return /^InitiatorName=(\S+)/m.exec(text)?.[1] ?? "";
  }
}
