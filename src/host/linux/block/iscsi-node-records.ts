/**
 * open-iscsi's node records, written by this daemon only for their CHAP lines. iscsiadm has no
 * stdin/file input for record values and `-o update -v <secret>` would show a secret in
 * /proc/<pid>/cmdline, so the authentication lines of the record file(s) under
 * `<nodesDir>/<iqn>/<address>,<port>[,<tpgt>][/<iface>]` are rewritten here: the record's other
 * lines are kept, `node.session.auth.{authmethod,username,password,username_in,password_in}` are
 * replaced, and each file is replaced atomically (a temporary copy beside the node database, mode
 * 0600 — open-iscsi's own mode for records — fsync, rename). The secrets rest in those root-only
 * files, exactly as with `iscsiadm -o update`. A daemon killed before a rename leaves its copy;
 * the start-up sweep removes it.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { TargetPortal } from "../../../groups/iscsi/types.ts";
import { CsiProxyError, Code } from "../../../errors.ts";
import { writeFileAtomic } from "../../../state/atomic-file.ts";
import { portalArg } from "./iscsiadm-output.ts";
import { readdirOrEmpty } from "./iscsi-sysfs.ts";

const AUTH_KEYS = new Set([
  "node.session.auth.authmethod",
  "node.session.auth.username",
  "node.session.auth.password",
  "node.session.auth.username_in",
  "node.session.auth.password_in",
]);

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

/** Node record files of `iqn` behind `portal`: `<addr>,<port>` or `<addr>,<port>,<tpgt>`, a file or a directory of iface records. */
export async function nodeRecordFiles(nodesDir: string, portal: TargetPortal, iqn: string): Promise<string[]> {
  const dir = path.join(nodesDir, iqn);
  if (path.dirname(dir) !== nodesDir) return []; // an IQN is one path component (validated upstream of here too)
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

/**
 * Replaces the authentication lines of every node record of `iqn` behind `portal` with `auth`
 * (`nodesDir` absolute; copies written in its parent directory). NotFound, nothing written, when
 * there is no record (the target was not discovered through that portal).
 */
export async function setRecordAuth(nodesDir: string, portal: TargetPortal, iqn: string, auth: [string, string][]): Promise<void> {
  const records = await nodeRecordFiles(nodesDir, portal, iqn);
  if (records.length === 0) throw new CsiProxyError(Code.NotFound, `no node record for ${iqn} at ${portalArg(portal)} in ${nodesDir}`);
  for (const file of records) {
    const text = await fs.readFile(file, "utf8");
    await writeFileAtomic(file, rewriteAuth(text, auth), { mode: 0o600, tmpDir: path.dirname(nodesDir) });
  }
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

/**
 * Start-up sweep of the temporary copies of node records that setRecordAuth writes beside the
 * node database (`<dirname(nodesDir)>/.<record>.tmp-<pid>-<12 hex>`, 0600, holding the record's CHAP
 * secrets) and a process killed before their rename leaves behind. Removed: regular files (lstat;
 * a link of that name is left and reported) of that name shape, owned by this process's user, whose
 * writer pid is no longer running (a live csi-proxy on the node may be writing its own). Nothing
 * else in the directory is touched. Returns the names removed and those that could not be.
 */
export async function removeLeftoverRecordCopies(nodesDir: string): Promise<{ removed: string[]; failed: string[] }> {
  const dir = path.dirname(nodesDir);
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
