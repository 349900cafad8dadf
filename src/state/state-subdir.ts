/**
 * The Linux state directory walked at every use like any untrusted path: `-state-dir` is opened and
 * checked (fstat: a directory owned by csi-proxy's uid, no group/other write), then each
 * sub-directory is created if missing and opened *inside the held parent* with
 * `O_DIRECTORY|O_NOFOLLOW` through `/proc/self/fd/<fd>/<name>` (one component: the kernel resolves
 * the magic link to exactly the held directory, and O_NOFOLLOW refuses a link as that component),
 * and checked the same way. Files are then named relative to the last held directory
 * ({@link StateDirHandle.at}), opened `O_NOFOLLOW` by their users.
 *
 * Contract:
 * - a symbolic link (or any non-directory) in place of a sub-directory, a sub-directory owned by
 *   another uid, or one writable by group/others: FailedPrecondition naming its path and what to do;
 *   nothing is created, written or chmod'ed through it;
 * - `-state-dir` itself is opened by its name (an operator may make it a link; start-up secured what
 *   it names: state-dir.ts), created 0700 when missing, and checked by fstat the same way;
 * - handles are owned by {@link withStateDir}'s scope: every `/proc/self/fd/N` string is used only
 *   inside it, and every handle is closed when it ends (never by GC). Linux only.
 */
import { constants } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { Code, CsiProxyError, failedPrecondition } from "../errors.ts";

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** An open, checked directory of the state tree. */
export interface StateDirHandle {
  /** Its path, for messages. */
  readonly path: string;
  /** `/proc/self/fd/<fd>/<name>`: `name` (one component) inside this directory. Valid only in the scope. */
  at(name: string): string;
  /** fstat of the directory itself. */
  stat(): Promise<import("node:fs").Stats>;
  /** fchmod of the directory itself. */
  chmod(mode: number): Promise<void>;
  /** The names in the directory. */
  list(): Promise<string[]>;
  /** fsync of the directory (makes a rename in it durable). */
  sync(): Promise<void>;
}

export interface StateWalkOptions {
  /** Mode for sub-directories created here (subject to the umask), default 0700; an array gives one per component of `rel`. */
  createMode?: number | readonly number[];
  /** The uid that must own every directory (default: this process's effective uid). */
  uid?: number;
}

const octal = (mode: number) => `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;

class Held implements StateDirHandle {
  readonly #file: fs.FileHandle;
  readonly path: string;
  constructor(file: fs.FileHandle, shown: string) {
    this.#file = file;
    this.path = shown;
  }
  at(name: string): string {
    if (name === "" || name.includes("/") || name === "." || name === "..") throw new CsiProxyError(Code.Internal, `state entry name must be one component: ${JSON.stringify(name)}`);
    return `/proc/self/fd/${this.#file.fd}/${name}`;
  }
  chmod(mode: number): Promise<void> {
    return this.#file.chmod(mode);
  }
  sync(): Promise<void> {
    return this.#file.sync();
  }
  stat() {
    return this.#file.stat();
  }
  list(): Promise<string[]> {
    return fs.readdir(`/proc/self/fd/${this.#file.fd}`);
  }
  close(): Promise<void> {
    return this.#file.close().catch(() => {});
  }
}

async function check(dir: Held, uid: number): Promise<void> {
  const st = await dir.stat();
  if (!st.isDirectory()) throw failedPrecondition(`state directory ${dir.path} is not a directory: remove it`);
  if (st.uid !== uid) {
    throw failedPrecondition(`state directory ${dir.path} is owned by uid ${st.uid}, not by the user csi-proxy runs as (uid ${uid}): check it, then remove it or chown it`);
  }
  if (st.mode & 0o022) throw failedPrecondition(`state directory ${dir.path} is writable by group or others (mode ${octal(st.mode)}): remove that write access`);
}

/** Opens `name` inside `parent` (created with `mode` when missing), never through a link, and checks it. */
async function openSub(parent: Held, name: string, mode: number, uid: number): Promise<Held> {
  const shown = path.posix.join(parent.path, name);
  const refuseLink = () =>
    failedPrecondition(`${shown} is a symbolic link or not a directory; csi-proxy keeps its state only in directories it owns and does not follow links there: remove it`);
  let file: fs.FileHandle | undefined;
  for (let tries = 0; file === undefined; tries++) {
    try {
      file = await fs.open(parent.at(name), DIR_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ELOOP" || code === "ENOTDIR") throw refuseLink();
      if (code !== "ENOENT" || tries > 0) throw new CsiProxyError(Code.FailedPrecondition, `state directory ${shown}: ${(err as Error).message}`, { cause: err });
      await fs.mkdir(parent.at(name), { mode }).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== "EEXIST") throw new CsiProxyError(Code.FailedPrecondition, `state directory ${shown} cannot be created: ${e.message}`, { cause: e });
      });
    }
  }
  const held = new Held(file, shown);
  try {
    await check(held, uid);
    return held;
  } catch (err) {
    await held.close();
    throw err;
  }
}

/**
 * Runs `fn` with `<stateDir>/<rel…>` held (see module doc): each component of `rel` created when
 * missing and opened inside its held parent without following links; every handle closed when `fn`
 * settles. `fn` also gets the held state directory itself.
 */
export async function withStateDir<T>(
  stateDir: string,
  rel: readonly string[],
  fn: (dir: StateDirHandle, top: StateDirHandle) => Promise<T>,
  options: StateWalkOptions = {},
): Promise<T> {
  const uid = options.uid ?? process.geteuid?.() ?? 0;
  const modeOf = (i: number) => {
    const m = options.createMode ?? 0o700;
    return typeof m === "number" ? m : (m[i] ?? 0o700);
  };
  const held: Held[] = [];
  try {
    const openTop = () => fs.open(stateDir, constants.O_RDONLY | constants.O_DIRECTORY);
    const top = await openTop()
      .catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT") throw err;
        await fs.mkdir(stateDir, { recursive: true, mode: 0o700 }); // removed while running: made again, as at start-up
        return openTop();
      })
      .catch((err: NodeJS.ErrnoException) => {
        throw new CsiProxyError(Code.FailedPrecondition, `state directory ${stateDir}: ${err.message}`, { cause: err });
      });
    held.push(new Held(top, stateDir));
    await check(held[0], uid);
    for (const [i, name] of rel.entries()) held.push(await openSub(held[held.length - 1], name, modeOf(i), uid));
    return await fn(held[held.length - 1], held[0]);
  } finally {
    for (const h of held.reverse()) await h.close();
  }
}
