import * as path from "node:path";
import type { EntryKind, FilesystemHostApi, RemoveOptions } from "../../src/groups/filesystem/host-api.ts";
import { alreadyExists, failedPrecondition, notFound } from "../../src/errors.ts";
import { stopIfAborted } from "../../src/util/stop-if-aborted.ts";

type Entry = { kind: "file" } | { kind: "directory" } | { kind: "symlink"; target: string } | { kind: "mount" };

/**
 * In-memory filesystem for unit tests (POSIX paths). Stateful: what a test creates stays there.
 * `mounts` marks directories as mount points; `calls` records every host call in order.
 */
export class FakeFilesystemHost implements FilesystemHostApi {
  readonly entries = new Map<string, Entry>([["/", { kind: "directory" }]]);
  readonly calls: string[] = [];

  /** Test setup helpers: create entries directly (parents are created as directories). */
  addDir(p: string): this {
    for (let cur = p; cur !== "/"; cur = path.dirname(cur)) if (!this.entries.has(cur)) this.entries.set(cur, { kind: "directory" });
    return this;
  }
  addFile(p: string): this {
    this.addDir(path.dirname(p));
    this.entries.set(p, { kind: "file" });
    return this;
  }
  addSymlink(p: string, target: string): this {
    this.addDir(path.dirname(p));
    this.entries.set(p, { kind: "symlink", target });
    return this;
  }
  addMount(p: string): this {
    this.addDir(p);
    this.entries.set(p, { kind: "mount" });
    return this;
  }

  async lstat(p: string): Promise<EntryKind | null> {
    this.calls.push(`lstat ${p}`);
    const e = this.entries.get(p);
    return !e ? null : e.kind === "mount" ? "directory" : e.kind;
  }
  async realpath(p: string): Promise<string | null> {
    let cur = p;
    for (let hops = 0; hops < 40; hops++) {
      const e = this.entries.get(cur);
      if (!e) return null;
      if (e.kind !== "symlink") return cur;
      cur = path.resolve(path.dirname(cur), e.target);
    }
    throw failedPrecondition(`too many levels of symlinks: ${p}`);
  }
  async mkdirAll(p: string): Promise<void> {
    this.calls.push(`mkdirAll ${p}`);
    for (let cur = p; cur !== "/"; cur = path.dirname(cur)) {
      const e = this.entries.get(cur);
      if (e && e.kind === "file") throw alreadyExists(`mkdir ${cur}: exists`);
    }
    this.addDir(p);
  }
  async removeDir(p: string): Promise<void> {
    this.calls.push(`removeDir ${p}`);
    if (!this.entries.has(p)) throw notFound(`rmdir ${p}: missing`);
    if (this.children(p).length) throw failedPrecondition(`rmdir ${p}: directory not empty`);
    this.entries.delete(p);
  }
  async removeAll(p: string, options?: RemoveOptions): Promise<void> {
    this.calls.push(`removeAll ${p}`);
    stopIfAborted(options?.signal);
    for (const key of [...this.entries.keys()]) if (key === p || key.startsWith(p + "/")) this.entries.delete(key);
  }
  async removeContents(p: string, options?: RemoveOptions): Promise<void> {
    this.calls.push(`removeContents ${p}`);
    stopIfAborted(options?.signal);
    if (!this.entries.has(p)) throw notFound(`read directory ${p}: missing`);
    for (const key of [...this.entries.keys()]) if (key.startsWith(p + "/")) this.entries.delete(key);
  }
  async readDir(p: string): Promise<string[]> {
    this.calls.push(`readDir ${p}`);
    if (!this.entries.has(p)) throw notFound(`read directory ${p}: missing`);
    return this.children(p).map((c) => path.basename(c));
  }
  async symlink(target: string, linkPath: string): Promise<void> {
    this.calls.push(`symlink ${target} ${linkPath}`);
    if (this.entries.has(linkPath)) throw alreadyExists(`symlink ${linkPath}: exists`);
    this.entries.set(linkPath, { kind: "symlink", target });
  }
  async linkTargetExists(p: string): Promise<boolean> {
    return (await this.realpath(p)) !== null;
  }
  async isMountPoint(p: string): Promise<boolean> {
    return this.entries.get(p)?.kind === "mount";
  }

  private children(p: string): string[] {
    return [...this.entries.keys()].filter((k) => k !== p && path.dirname(k) === p);
  }
}
