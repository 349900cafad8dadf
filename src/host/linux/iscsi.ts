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
 * CHAP secrets never go on argv: `iscsiadm -o update -n node.session.auth.password -v <secret>`
 * would show the secret in /proc/<pid>/cmdline to every local user, and iscsiadm has no
 * stdin/file input for record values. Instead the authentication lines of the node record file(s)
 * under /etc/iscsi/nodes/<iqn>/<address>,<port>[,<tpgt>][/<iface>] are rewritten by this daemon:
 * the record's other lines are kept, `node.session.auth.{authmethod,username,password,
 * username_in,password_in}` are replaced, and the file is replaced atomically (temporary file in
 * /etc/iscsi, mode 0600 — open-iscsi's own mode for records — fsync, rename). iscsiadm then
 * hands the record to iscsid over its local socket at login. The secrets rest in those root-only
 * files, exactly as with `iscsiadm -o update`.
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
 * Disk numbers follow the disk group's numbering (src/host/linux/disk-numbers.ts `diskNumberOf`):
 * the block device's dev_t as (major << 20) | minor.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { IscsiHostApi } from "../../groups/iscsi/host-api.ts";
import type { AuthenticationType, TargetPortal } from "../../groups/iscsi/types.ts";
import { CsiProxyError, Code } from "../../errors.ts";
import { HostCommandError, runCommand } from "../exec/run-command.ts";
import { readFileIfExists, readStateFile, removeFileDurablyIn, writeFileAtomic, writeFileAtomicIn } from "../../state/atomic-file.ts";
import { withStateDir, type StateDirHandle } from "../../state/state-subdir.ts";

/** The mutual CHAP secret's name in `<state-dir>/iscsi`. */
const MUTUAL_FILE = "mutual-chap-secret";

export interface LinuxIscsiHostOptions {
  /** The daemon's state directory (`-state-dir`): holds the mutual CHAP secret. */
  stateDir: string;
  /** The iscsiadm program (default `iscsiadm` on the fixed system PATH). */
  iscsiadm?: string;
  /** open-iscsi's node database (default /etc/iscsi/nodes). */
  nodesDir?: string;
  /** sysfs mount point (default /sys; tests use a fake tree). */
  sysDir?: string;
  /** Bound for one iscsiadm run (default 180 s: a login retries for up to 120 s by default). */
  timeoutMs?: number;
  /** Set when the start-up check refused the state directory's iSCSI part: mutual CHAP answers it. */
  stateRefusal?: CsiProxyError | null;
}

const AUTH_KEYS = new Set([
  "node.session.auth.authmethod",
  "node.session.auth.username",
  "node.session.auth.password",
  "node.session.auth.username_in",
  "node.session.auth.password_in",
]);

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
 * A node record with its authentication lines replaced by `auth` (other lines kept in order; the
 * new lines go before `# END RECORD` when present).
 */
export function rewriteAuth(record: string, auth: [string, string][]): string {
  const lines = record.split("\n").filter((line) => !AUTH_KEYS.has(line.split("=", 1)[0].trim()));
  while (lines.length && lines[lines.length - 1] === "") lines.pop();
  const added = auth.map(([k, v]) => `${k} = ${v}`);
  const end = lines.findIndex((l) => l.trim() === "# END RECORD");
  if (end >= 0) lines.splice(end, 0, ...added);
  else lines.push(...added);
  return `${lines.join("\n")}\n`;
}

/** A temporary copy of a node record (state/atomic-file.ts writeFileAtomic's name shape): group 1 is the writer's pid. */
const RECORD_COPY = /^\..+\.tmp-(\d+)-[0-9a-f]{12}$/;

/** Whether process `pid` exists (signal 0: EPERM means it exists under another user). */
function processRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
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
    this.#nodesDir = path.resolve(options.nodesDir ?? "/etc/iscsi/nodes");
    this.#sys = options.sysDir ?? "/sys";
    this.#timeoutMs = options.timeoutMs ?? 180_000;
    this.#stateDir = options.stateDir;
    this.#mutualFile = path.join(options.stateDir, "iscsi", "mutual-chap-secret");
    this.#stateRefusal = options.stateRefusal ?? null;
  }

  /**
   * Start-up sweep of the temporary copies of node records that connectTarget writes beside the
   * node database (`<dirname(nodesDir)>/.<record>.tmp-<pid>-<12 hex>`, 0600, holding the record's CHAP
   * secrets) and a process killed before their rename leaves behind. Removed: regular files (lstat;
   * a link of that name is left and reported) of that name shape, owned by this process's user, whose
   * writer pid is no longer running (a live csi-proxy on the node may be writing its own). Nothing
   * else in the directory is touched. Returns the names removed and those that could not be.
   */
  async removeLeftoverRecordCopies(): Promise<{ removed: string[]; failed: string[] }> {
    const dir = path.dirname(this.#nodesDir);
    const removed: string[] = [];
    const failed: string[] = [];
    const entries = await fs.readdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return [] as string[];
      throw err;
    });
    const uid = process.geteuid?.();
    for (const entry of entries) {
      const m = RECORD_COPY.exec(entry);
      if (!m || processRunning(Number(m[1]))) continue;
      const file = path.join(dir, entry);
      const st = await fs.lstat(file).catch(() => null);
      if (st === null || (uid !== undefined && st.uid !== uid)) continue;
      const ok = st.isFile() && (await fs.unlink(file).then(() => true, (err: NodeJS.ErrnoException) => err.code === "ENOENT"));
      (ok ? removed : failed).push(entry);
    }
    return { removed, failed };
  }

  async #run(what: string, args: string[], options: { ok?: number[]; redact?: string[] } = {}) {
    try {
      return await runCommand(this.#iscsiadm, args, { timeoutMs: this.#timeoutMs, okExitCodes: options.ok ?? [0], redact: options.redact });
    } catch (err) {
      throw await this.#error(err, what);
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
    return { connected: (await this.#sessions(portal, iqn)).length > 0 };
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
    const records = await this.#recordFiles(portal, iqn);
    if (records.length === 0) throw new CsiProxyError(Code.NotFound, `no node record for ${iqn} at ${portalArg(portal)} in ${this.#nodesDir}`);
    for (const file of records) {
      const text = await fs.readFile(file, "utf8");
      await writeFileAtomic(file, rewriteAuth(text, lines), { mode: 0o600, tmpDir: path.dirname(this.#nodesDir) });
    }
    await this.#run(`log in to ${iqn} at ${portalArg(portal)}`, ["-m", "node", "-T", iqn, "-p", portalArg(portal), "--login"], { ok: [0, 15], redact });
  }

  async disconnectTarget(portal: TargetPortal, iqn: string): Promise<void> {
    await this.#run(`log out of ${iqn} at ${portalArg(portal)}`, ["-m", "node", "-T", iqn, "-p", portalArg(portal), "--logout"], { ok: [0, 21] });
  }

  async getTargetDisks(portal: TargetPortal, iqn: string): Promise<string[]> {
    const disks: string[] = [];
    for (const session of await this.#sessions(portal, iqn)) {
      const device = path.join(this.#sys, "class", "iscsi_session", session, "device");
      for (const target of (await readdirOrEmpty(device)).filter((n) => /^target\d+:\d+:\d+$/.test(n))) {
        for (const lun of (await readdirOrEmpty(path.join(device, target))).filter((n) => /^\d+:\d+:\d+:\d+$/.test(n))) {
          for (const block of await readdirOrEmpty(path.join(device, target, lun, "block"))) {
            const dev = (await readFileIfExists(path.join(device, target, lun, "block", block, "dev")))?.trim();
            const m = dev ? /^(\d+):(\d+)$/.exec(dev) : null;
            if (m) disks.push(String(Number(m[1]) * 2 ** 20 + Number(m[2])));
          }
        }
      }
    }
    return disks;
  }

  async setMutualChapSecret(secret: string): Promise<void> {
    if (this.#stateRefusal) throw this.#stateRefusal;
    await this.#inIscsiState((dir) => (secret === "" ? removeFileDurablyIn(dir, MUTUAL_FILE) : writeFileAtomicIn(dir, MUTUAL_FILE, secret, { mode: 0o600 })));
  }

  /** `fn` with `<state-dir>/iscsi` held, walked without following links (src/state/state-subdir.ts). */
  #inIscsiState<T>(fn: (dir: StateDirHandle) => Promise<T>): Promise<T> {
    return withStateDir(this.#stateDir, ["iscsi"], fn, { createMode: 0o700 });
  }

  /** sysfs session names (`sessionN`) logged in to `iqn` through `portal`. */
  async #sessions(portal: TargetPortal, iqn: string): Promise<string[]> {
    const classDir = path.join(this.#sys, "class", "iscsi_session");
    const found: string[] = [];
    for (const session of await readdirOrEmpty(classDir)) {
      const targetName = (await readFileIfExists(path.join(classDir, session, "targetname")))?.trim();
      if (targetName !== iqn) continue;
      const device = path.join(classDir, session, "device");
      for (const conn of (await readdirOrEmpty(device)).filter((n) => n.startsWith("connection"))) {
        const connDir = path.join(this.#sys, "class", "iscsi_connection", conn);
        const address = (await readFileIfExists(path.join(connDir, "persistent_address")))?.trim().toLowerCase();
        const port = Number((await readFileIfExists(path.join(connDir, "persistent_port")))?.trim());
        if (address === portal.targetAddress.toLowerCase() && port === portal.targetPort) found.push(session);
      }
    }
    return found;
  }

  /** Node record files of `iqn` behind `portal`: `<addr>,<port>` or `<addr>,<port>,<tpgt>`, a file or a directory of iface records. */
  async #recordFiles(portal: TargetPortal, iqn: string): Promise<string[]> {
    const dir = path.join(this.#nodesDir, iqn);
    if (path.dirname(dir) !== this.#nodesDir) return []; // an IQN is one path component (validated upstream of here too)
    const prefix = `${portal.targetAddress},${portal.targetPort}`.toLowerCase();
    const files: string[] = [];
    for (const entry of await readdirOrEmpty(dir)) {
      const lower = entry.toLowerCase();
      if (lower !== prefix && !lower.startsWith(`${prefix},`)) continue;
      const full = path.join(dir, entry);
      const st = await fs.lstat(full);
      if (st.isFile()) files.push(full);
      else if (st.isDirectory()) {
        for (const iface of await readdirOrEmpty(full)) {
          if (!iface.startsWith(".") && (await fs.lstat(path.join(full, iface))).isFile()) files.push(path.join(full, iface));
        }
      }
    }
    return files;
  }

  async #initiatorName(): Promise<string> {
    const text = (await readFileIfExists("/etc/iscsi/initiatorname.iscsi")) ?? "";
    return /^InitiatorName=(\S+)/m.exec(text)?.[1] ?? "";
  }

  /** iscsiadm's exit codes (open-iscsi ISCSI_ERR_*) → gRPC codes with an actionable message. */
  async #error(err: unknown, what: string): Promise<CsiProxyError> {
    if (!(err instanceof HostCommandError)) return CsiProxyError.from(err);
    if (err.exitCode === null) {
      const code = err.timedOut ? Code.DeadlineExceeded : Code.FailedPrecondition;
      const hint = /not installed/.test(err.message) ? " (install open-iscsi)" : "";
      return new CsiProxyError(code, `${what}: ${err.message}${hint}`, { cause: err });
    }
    const tcpLoaded = (await readFileIfExists(path.join(this.#sys, "module", "iscsi_tcp", "initstate")).catch(() => null)) !== null;
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
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return (await fs.readdir(dir)).sort();
  } catch {
    return [];
  }
}
