/**
 * Crash-safe small files: the daemon's persistent state (SMB reference counts, the iSCSI mutual CHAP
 * secret on Linux). A write never leaves a torn file behind: the content goes to a temporary file
 * in the same directory (created exclusively with the requested mode, so a secret is never readable
 * by others, not even briefly), is fsync'ed, renamed over the target, and the directory is fsync'ed
 * so that the rename itself survives a power cut. A reader sees the old or the new content, never a
 * mix. Works on Linux and Windows (where the directory fsync is skipped: NTFS journals the rename).
 */
import * as fs from "node:fs/promises";
import { constants as fsConstants } from "node:fs";
import * as path from "node:path";
import { nodeCrypto } from "../util/node-crypto.ts";
import { failedPrecondition } from "../errors.ts";

/**
 * Writes `data` to `file` atomically (see module doc), creating missing parent directories (0700).
 * The file ends with exactly `mode` (default 0600).
 */
export async function writeFileAtomic(file: string, data: string | Buffer, options: { mode?: number; tmpDir?: string } = {}): Promise<void> {
  const mode = options.mode ?? 0o600;
  const dir = path.dirname(file);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  // `tmpDir` (same filesystem) keeps the temporary file out of directories other programs scan.
  const tmp = path.join(options.tmpDir ?? dir, `.${path.basename(file)}.tmp-${process.pid}-${nodeCrypto().randomBytes(6).toString("hex")}`);
  const handle = await fs.open(tmp, "wx", mode);
  try {
    try {
      await handle.writeFile(data);
      await handle.chmod(mode); // the umask may have narrowed it; never widen beyond `mode`
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await syncDir(dir);
}

/**
 * A directory held open by its caller (src/state/state-subdir.ts): entries are named inside it,
 * never through a link in a parent.
 */
export interface HeldDir {
  readonly path: string;
  at(name: string): string;
  sync(): Promise<void>;
}

/**
 * {@link writeFileAtomic} inside the held directory `dir`: `name` (one component) is replaced
 * atomically by a temporary file created there exclusively with O_NOFOLLOW and `mode` (default
 * 0600); the rename replaces whatever entry `name` is (a planted link is replaced, never followed).
 */
export async function writeFileAtomicIn(dir: HeldDir, name: string, data: string | Buffer, options: { mode?: number } = {}): Promise<void> {
  const mode = options.mode ?? 0o600;
  const tmpName = `.${name}.tmp-${process.pid}-${nodeCrypto().randomBytes(6).toString("hex")}`;
  const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;
  const handle = await fs.open(dir.at(tmpName), flags, mode);
  try {
    try {
      await handle.writeFile(data);
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(dir.at(tmpName), dir.at(name));
  } catch (err) {
    await fs.unlink(dir.at(tmpName)).catch(() => {});
    throw err;
  }
  await dir.sync();
}

/**
 * Whether `entry` is a temporary file {@link writeFileAtomic} / {@link writeFileAtomicIn} made for
 * `name` (`.<name>.tmp-<pid>-<12 hex>`): one a process killed between its creation and its rename
 * leaves behind (it may hold a full secret).
 */
export function isTempFileOf(entry: string, name: string): boolean {
  const prefix = `.${name}.tmp-`;
  return entry.startsWith(prefix) && /^\d+-[0-9a-f]{12}$/.test(entry.slice(prefix.length));
}

/**
 * Removes the temporary files of `name` (see {@link isTempFileOf}) from the held directory `dir`;
 * only at start-up, before anything writes `name` (a write in progress would lose its file). Each is
 * unlinked by name inside the held directory: a link is removed itself, never followed; a directory
 * of that name is left (and reported as not removed). Returns the names removed and those that could
 * not be. Durable: `dir` is fsync'ed after a removal.
 */
export async function removeTempFilesIn(dir: HeldDir & { list(): Promise<string[]> }, name: string): Promise<{ removed: string[]; failed: string[] }> {
  const removed: string[] = [];
  const failed: string[] = [];
  for (const entry of (await dir.list()).filter((e) => isTempFileOf(e, name))) {
    const ok = await fs.unlink(dir.at(entry)).then(() => true, (err: NodeJS.ErrnoException) => err.code === "ENOENT");
    (ok ? removed : failed).push(entry);
  }
  if (removed.length > 0) await dir.sync().catch(() => {});
  return { removed, failed };
}

/**
 * {@link removeTempFilesIn} for a directory named by path (Windows: its state directory is secured
 * by its DACL at start-up, src/state/state-dir-windows.ts): only regular files are removed (lstat;
 * a link or junction of that name is left and reported), never followed.
 */
export async function removeTempFiles(dirPath: string, name: string, join: (a: string, b: string) => string = (a, b) => path.join(a, b)): Promise<{ removed: string[]; failed: string[] }> {
  const removed: string[] = [];
  const failed: string[] = [];
  const entries = await fs.readdir(dirPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [] as string[];
    throw err;
  });
  for (const entry of entries.filter((e) => isTempFileOf(e, name))) {
    const p = join(dirPath, entry);
    const st = await fs.lstat(p).catch(() => null);
    if (st === null) continue;
    const ok = st.isFile() && (await fs.unlink(p).then(() => true, (err: NodeJS.ErrnoException) => err.code === "ENOENT"));
    (ok ? removed : failed).push(entry);
  }
  return { removed, failed };
}

/** Removes the entry `name` of the held directory `dir` (missing is fine; a link is removed, not followed), durably. */
export async function removeFileDurablyIn(dir: HeldDir, name: string): Promise<void> {
  await fs.unlink(dir.at(name)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw err;
  });
  await dir.sync().catch(() => {});
}

/** Removes `file` (a missing file is fine) and makes the removal durable. */
export async function removeFileDurably(file: string): Promise<void> {
  await fs.rm(file, { force: true });
  await syncDir(path.dirname(file)).catch(() => {});
}

async function syncDir(dir: string): Promise<void> {
  if (process.platform === "win32") return;
  const handle = await fs.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Content of `file`, or null when it does not exist. */
export async function readFileIfExists(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/**
 * Content of the state file `file`, or null when it does not exist. Only a regular file owned by
 * `uid` (default: this process's; not checked where there are no uids, i.e. Windows, whose owner
 * check is done at start-up by src/state/state-dir-windows.ts) is read: the last component is
 * opened with O_NOFOLLOW (a symbolic link fails instead of being followed) and O_NONBLOCK (a FIFO
 * cannot hang the open), and the opened file itself is checked with fstat, so what was checked is
 * what is read. Anything else is refused with FailedPrecondition naming the file.
 */
export async function readStateFile(file: string, options: { uid?: number | null; shown?: string } = {}): Promise<string | null> {
  const shownFile = options.shown ?? file;
  const uid = options.uid === undefined ? (process.getuid?.() ?? null) : options.uid;
  const flags = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, flags);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    if (code === "ELOOP") throw failedPrecondition(`state file ${shownFile} is a symbolic link; csi-proxy reads state only from regular files it owns: remove it`);
    throw err;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw failedPrecondition(`state file ${shownFile} is not a regular file: remove it`);
    if (uid !== null && st.uid !== uid) {
      throw failedPrecondition(`state file ${shownFile} is owned by uid ${st.uid}, not by the user csi-proxy runs as (uid ${uid}), so it is not trusted: check it, then remove it or chown it`);
    }
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

/**
 * A JSON document kept in one file. `load` parses and validates it (null when absent; throws on a
 * corrupt or invalid file, never silently resets; read with {@link readStateFile}'s checks, or
 * `options.read`: Windows passes state-file-windows.ts's no-reparse-point read); `save` replaces it atomically. Saves are
 * serialised in call order, so the file always ends up with the last saved value.
 */
export interface JsonStateFile<T> {
  readonly path: string;
  load(): Promise<T | null>;
  save(value: T): Promise<void>;
}

export function createJsonStateFile<T>(
  file: string,
  validate: (raw: unknown) => T,
  options: { mode?: number; read?: (file: string) => Promise<string | null> } = {},
): JsonStateFile<T> {
  let queue: Promise<unknown> = Promise.resolve();
  const read = options.read ?? readStateFile;
  return {
    path: file,
    async load() {
      const text = await read(file);
      if (text === null) return null;
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch (err) {
        throw new Error(`${file} is not valid JSON: ${(err as Error).message}`);
      }
      return validate(raw);
    },
    save(value) {
      const text = `${JSON.stringify(value, null, 2)}\n`;
      const next = queue.then(() => writeFileAtomic(file, text, options));
      queue = next.catch(() => {});
      return next;
    },
  };
}
