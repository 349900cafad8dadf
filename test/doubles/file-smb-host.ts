// An SMB host double whose whole world is on disk, so that several processes share it: a mapping is
// a marker file, a link is a real symbolic link, and every create/remove of a mapping is appended
// to an operations log (O_APPEND writes of one short line are atomic between processes).
import { appendFileSync, existsSync, mkdirSync, readlinkSync, lstatSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import * as path from "node:path";
import type { SmbHostApi } from "../../src/groups/smb/host-api.ts";

export class FileSmbHost implements SmbHostApi {
  readonly #dir: string;
  readonly #who: string;
  constructor(dir: string, who: string) {
    this.#dir = dir;
    this.#who = who;
    mkdirSync(path.join(dir, "mappings"), { recursive: true });
  }
  #marker(root: string) {
    return path.join(this.#dir, "mappings", createHash("sha256").update(root).digest("hex").slice(0, 16));
  }
  get opsLog() {
    return path.join(this.#dir, "ops.log");
  }
  async getMapping(root: string) {
    return existsSync(this.#marker(root)) ? { status: "OK" } : null;
  }
  async getMappings(roots: readonly string[]) {
    const found = new Map<string, { status: string }>();
    for (const root of roots) if (existsSync(this.#marker(root))) found.set(root, { status: "OK" });
    return found;
  }
  async createMapping(root: string) {
    appendFileSync(this.opsLog, `create ${root} ${this.#who}\n`);
    writeFileSync(this.#marker(root), root);
  }
  async removeMapping(root: string) {
    appendFileSync(this.opsLog, `remove ${root} ${this.#who}\n`);
    rmSync(this.#marker(root), { force: true });
  }
  async isPathValid() {
    return true;
  }
  async createDirLink(linkPath: string, remotePath: string) {
    symlinkSync(this.linkTargetFor(remotePath), linkPath);
  }
  async readDirLink(linkPath: string) {
    try {
      return lstatSync(linkPath).isSymbolicLink() ? { target: readlinkSync(linkPath) } : { target: null };
    } catch {
      return null;
    }
  }
  linkTargetFor(remotePath: string): string {
    return `/smb-double/${remotePath.replace(/\\/g, "/")}`;
  }
}
