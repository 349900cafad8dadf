/**
 * SMB on Linux: a share root's "global mapping" is a CIFS mount of `//server/share` in a private
 * directory `<state-dir>/smb/mounts/<label>-<hash>`; a local link is a symlink into that mount.
 *
 * Credentials reach mount.cifs only through a credentials file (`credentials=<file>`): created
 * exclusively with mode 0600 in `<state-dir>/smb/credentials` (a 0700 directory), holding
 * `username=`, `password=` and, for `DOMAIN\user`, `domain=` lines, and deleted as soon as the
 * mount command returns, whatever its outcome. The password is never on a command line (argv is
 * world-readable in /proc), never in the child's environment (no `PASSWD=`), never logged.
 * `-require-privacy` becomes the `seal` option (SMB3 encryption); an empty user name a guest mount.
 *
 * Pass-through per host-api.ts: no decisions beyond translating the operations.
 */
import { constants } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { nodeCrypto } from "../../util/node-crypto.ts";
import type { SmbHostApi } from "../../groups/smb/host-api.ts";
import { CsiProxyError, Code } from "../../errors.ts";
import { HostCommandError, runCommand } from "../exec/run-command.ts";
import { processMountIndex } from "./mounts/mount-index.ts";
import { symlinkAt } from "./paths/symlink-at.ts";
import { fsError } from "../fs-error.ts";
import { withStateDir, type StateDirHandle } from "../../state/state-subdir.ts";
import { callSignal } from "../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../util/stop-if-aborted.ts";

export interface LinuxSmbHostOptions {
  /** The daemon's state directory (`-state-dir`). */
  stateDir: string;
  /** The mount program (default `mount`, found on the fixed system PATH). Tests substitute a recorder. */
  mountCommand?: string;
  /** The umount program (default `umount`). */
  umountCommand?: string;
  /** Upper bound for mount/umount (default 60 s) and for the reachability probe (default 10 s). */
  timeoutMs?: number;
  probeTimeoutMs?: number;
}

export class LinuxSmbHost implements SmbHostApi {
  readonly #stateDir: string;
  readonly #mountsDir: string;
  readonly #credentialsDir: string;
  readonly #mount: string;
  readonly #umount: string;
  readonly #timeoutMs: number;
  readonly #probeTimeoutMs: number;

  constructor(options: LinuxSmbHostOptions) {
    this.#stateDir = options.stateDir;
    this.#mountsDir = path.join(options.stateDir, "smb", "mounts");
    this.#credentialsDir = path.join(options.stateDir, "smb", "credentials");
    this.#mount = options.mountCommand ?? "mount";
    this.#umount = options.umountCommand ?? "umount";
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? 10_000;
  }

  /** The private mount directory's name of a share root: readable label plus a hash (roots may hold any Unicode). */
  #mountName(root: string): string {
    const hash = nodeCrypto().createHash("sha256").update(root).digest("hex").slice(0, 16);
    const label = root.replace(/^\\\\/, "").replace(/[^a-z0-9.-]+/g, "_").slice(0, 64);
    return `${label}-${hash}`;
  }

  /** The private mount directory of a share root. */
  mountDirFor(root: string): string {
    return path.join(this.#mountsDir, this.#mountName(root));
  }

  /** `fn` with `<state-dir>/smb/mounts` held, walked without following links (src/state/state-subdir.ts). */
  #inMounts<T>(fn: (mounts: StateDirHandle, top: StateDirHandle) => Promise<T>): Promise<T> {
    // smb/ and smb/mounts/ are traversable by others: links in the kubelet directory point in here.
    return withStateDir(this.#stateDir, ["smb", "mounts"], fn, { createMode: [0o755, 0o755] });
  }

  async getMapping(root: string): Promise<{ status: string } | null> {
    const name = this.#mountName(root);
    return this.#inMounts(async (mounts) => {
      const st = await fs.lstat(mounts.at(name)).catch(() => null);
      if (st === null || !st.isDirectory()) return null;
      // Only this daemon mounts in its private directory, so whatever is mounted there is the mapping.
      const real = path.join(await fs.realpath(this.#stateDir), "smb", "mounts", name);
      return (await processMountIndex()).at(real).length > 0 ? { status: "OK" } : null;
    });
  }

  /** One held walk to the mounts directory, one realpath, one mount table index; then a map lookup per root. */
  async getMappings(roots: readonly string[]): Promise<Map<string, { status: string }>> {
    const found = new Map<string, { status: string }>();
    if (roots.length === 0 || !(await fs.lstat(this.#mountsDir).then(() => true, () => false))) return found;
    return this.#inMounts(async () => {
      const real = path.join(await fs.realpath(this.#stateDir), "smb", "mounts");
      const index = await processMountIndex();
      for (const root of roots) if (index.at(path.join(real, this.#mountName(root))).length > 0) found.set(root, { status: "OK" });
      return found;
    });
  }

  async createMapping(root: string, username: string, password: string, requirePrivacy: boolean): Promise<void> {
    const name = this.#mountName(root);
    const dir = this.mountDirFor(root);
    await this.#inMounts(async (mounts, top) => {
      stopIfAborted(callSignal(), { before: `creating the mount directory ${dir}`, done: NOTHING_CHANGED });
      await fs.mkdir(mounts.at(name), { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw fsError(err, "mkdir", dir);
      });
      // mount(8) follows symbolic links: never mount onto a link, or onto a directory another user made.
      const made = await fs.lstat(mounts.at(name));
      const uid = process.geteuid?.();
      if (made.isSymbolicLink() || !made.isDirectory() || (uid !== undefined && made.uid !== uid)) {
        throw new CsiProxyError(Code.FailedPrecondition, `mount directory ${dir} is not a directory owned by csi-proxy's user (uid ${uid}); remove it`);
      }
      // Links in the kubelet directory point in here: the state dir (maybe created 0700 for its
      // secrets, which are 0600 files) must be traversable, not listable, by others.
      const st = await top.stat();
      if ((st.mode & 0o011) !== 0o011) await top.chmod((st.mode & 0o777) | 0o011);
      const source = root.replaceAll("\\", "/");
      // Before the password is written to a file and mount(8) starts.
      stopIfAborted(callSignal(), { before: `mounting ${source}`, done: `the empty mount directory ${dir} exists (not mounted; the next NewSmbGlobalMapping uses it, start-up removes it if unused)` });
      const options: string[] = [];
      if (username === "") options.push("guest");
      if (requirePrivacy) options.push("seal");
      const mount = (extra: string[]) =>
        runCommand(this.#mount, ["-t", "cifs", source, dir, "-o", [...extra, ...options].join(",")], {
          timeoutMs: this.#timeoutMs,
          redact: [password],
        }).catch((err) => {
          throw mountError(err, source);
        });
      if (username === "") await mount([]);
      else {
        await withStateDir(
          this.#stateDir,
          ["smb", "credentials"],
          async (creds) => {
            const file = await this.#writeCredentials(creds, username, password);
            try {
              await mount([`credentials=${path.join(this.#credentialsDir, file)}`]);
            } finally {
              // The password must not stay on disk: a failed delete is the call's answer (the start-up sweep removes leftovers).
              await fs.unlink(creds.at(file)).catch((err: NodeJS.ErrnoException) => {
                if (err.code !== "ENOENT") throw fsError(err, "remove credentials file", path.join(this.#credentialsDir, file));
              });
            }
          },
          { createMode: [0o755, 0o700] },
        );
      }
    });
  }

  /**
   * Deletes credentials files a daemon killed during a mount left behind (each is deleted as soon
   * as its mount command returns, so at start-up none is in use). Run once before serving.
   */
  async removeLeftoverCredentials(): Promise<number> {
    const present = await fs.lstat(this.#credentialsDir).then(() => true, () => false);
    if (!present) return 0;
    return withStateDir(
      this.#stateDir,
      ["smb", "credentials"],
      async (creds) => {
        const leftovers = (await creds.list()).filter((n) => /^cred-[0-9a-f]{24}$/.test(n));
        for (const n of leftovers) await fs.unlink(creds.at(n)).catch(() => {});
        return leftovers.length;
      },
      { createMode: [0o755, 0o700] },
    );
  }

  /**
   * Start-up sweep of `<state-dir>/smb/mounts` (see SmbHostApi): entries named like a mapping's
   * directory that belong to none of `roots` and are not mount points (mount table, and the kernel's
   * EBUSY) are removed with rmdir inside the held directory — so only an empty directory goes: a
   * link is never followed (ENOTDIR), a directory with content is kept (ENOTEMPTY). Nothing is created.
   */
  async removeUnusedMappingDirs(roots: readonly string[]): Promise<string[]> {
    const present = await fs.lstat(this.#mountsDir).then(() => true, () => false);
    if (!present) return [];
    const keep = new Set(roots.map((r) => this.#mountName(r)));
    return this.#inMounts(async (mounts) => {
      const real = path.join(await fs.realpath(this.#stateDir), "smb", "mounts");
      const mounted = new Set((await processMountIndex()).entries.map((m) => m.mountPoint));
      const removed: string[] = [];
      for (const name of await mounts.list()) {
        if (keep.has(name) || !/^[a-z0-9._-]{0,64}-[0-9a-f]{16}$/.test(name) || mounted.has(path.join(real, name))) continue;
        if (await fs.rmdir(mounts.at(name)).then(() => true, () => false)) removed.push(name);
      }
      return removed;
    });
  }

  /**
   * Writes a mount.cifs credentials file (mode 0600, exclusive create, O_NOFOLLOW) inside the held
   * credentials directory (made 0700 first) and returns its name.
   */
  async #writeCredentials(creds: StateDirHandle, username: string, password: string): Promise<string> {
    await creds.chmod(0o700);
    const name = `cred-${nodeCrypto().randomBytes(12).toString("hex")}`;
    const slash = username.indexOf("\\");
    const lines =
      slash > 0 ? [`username=${username.slice(slash + 1)}`, `password=${password}`, `domain=${username.slice(0, slash)}`] : [`username=${username}`, `password=${password}`];
    const handle = await fs.open(creds.at(name), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      await handle.chmod(0o600);
      await handle.writeFile(`${lines.join("\n")}\n`);
    } catch (err) {
      await handle.close();
      await fs.unlink(creds.at(name)).catch(() => {});
      throw err;
    }
    await handle.close();
    return name;
  }

  async removeMapping(root: string): Promise<void> {
    const name = this.#mountName(root);
    const dir = this.mountDirFor(root);
    await this.#inMounts(async (mounts) => {
      try {
        await runCommand(this.#umount, [dir], { timeoutMs: this.#timeoutMs });
      } catch (err) {
        const text = err instanceof HostCommandError ? err.stderr : "";
        if (/not mounted|no mount point specified/i.test(text)) {
          // already gone: nothing to force
        } else if (/busy/i.test(text)) {
          await runCommand(this.#umount, ["-l", dir], { timeoutMs: this.#timeoutMs }); // Windows removes with -Force
        } else throw err;
      }
      await fs.rmdir(mounts.at(name)).catch(() => {});
    });
  }

  async isPathValid(remote: string): Promise<boolean> {
    const parts = remote.split("\\").filter(Boolean);
    const root = `\\\\${parts[0]}\\${parts[1]}`.toLowerCase();
    if ((await this.getMapping(root)) === null) return false;
    // statfs goes to the server for CIFS; a child process bounds a hung mount (fs calls could block a thread forever).
    const target = path.join(this.mountDirFor(root), ...parts.slice(2));
    try {
      await runCommand("stat", ["--file-system", "--format=%T", target], { timeoutMs: this.#probeTimeoutMs });
      return true;
    } catch {
      return false;
    }
  }

  /** Created by name inside the link's parent, opened without following links (symlink-at.ts). */
  createDirLink(linkPath: string, remotePath: string): Promise<void> {
    return symlinkAt(this.linkTargetFor(remotePath), linkPath, "dir", "create link");
  }

  async readDirLink(linkPath: string): Promise<{ target: string | null } | null> {
    try {
      const st = await fs.lstat(linkPath);
      if (!st.isSymbolicLink()) return { target: null };
      return { target: await fs.readlink(linkPath) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw fsError(err, "read link", linkPath);
    }
  }

  linkTargetFor(remotePath: string): string {
    const parts = remotePath.split("\\").filter(Boolean);
    const root = `\\\\${parts[0]}\\${parts[1]}`.toLowerCase();
    return path.join(this.mountDirFor(root), ...parts.slice(2));
  }
}

/** mount(8)/mount.cifs failures with a code a driver can act on; the text names the share, never a credential. */
function mountError(err: unknown, source: string): CsiProxyError {
  if (!(err instanceof HostCommandError)) return CsiProxyError.from(err);
  const text = err.stderr;
  const errno = /mount error\((\d+)\)/.exec(text)?.[1];
  let code: Code = err.code;
  let hint = "";
  if (/unknown filesystem type|No such device/i.test(text) || errno === "19") {
    code = Code.FailedPrecondition;
    hint = " (this kernel has no CIFS support: load the cifs module and install cifs-utils)";
  } else if (errno === "13" || errno === "1") code = Code.PermissionDenied;
  else if (errno === "2") code = Code.NotFound;
  // An unreachable server is a final failure of this call, not "still in progress" (compat/driver-fragments.ts).
  else if (["110", "111", "112", "113", "115", "101", "11"].includes(errno ?? "")) code = Code.FailedPrecondition;
  else if (err.exitCode === null) code = err.timedOut ? Code.DeadlineExceeded : Code.FailedPrecondition;
  return new CsiProxyError(code, `mounting ${source} failed: ${err.message}${hint}`, { cause: err });
}
