import type { SmbHostApi } from "../../src/groups/smb/host-api.ts";
import { alreadyExists, notFound, type CsiProxyError } from "../../src/errors.ts";

type Method = "getMapping" | "getMappings" | "createMapping" | "removeMapping" | "isPathValid" | "createDirLink" | "readDirLink";

/**
 * In-memory SMB host for unit tests. Stateful: mappings (with a status and whether they are
 * reachable) and the entries at local paths (links and other things). `calls` records every call
 * in order without the password; `credentials` keeps what createMapping received so tests can
 * check it arrived intact. `failures` makes the next call of a method throw the given error.
 */
export class FakeSmbHost implements SmbHostApi {
  readonly mappings = new Map<string, { status: string; reachable: boolean; username: string; requirePrivacy: boolean }>();
  /** Local path → link text, or null for "something that is not a link". */
  readonly entries = new Map<string, string | null>();
  readonly calls: string[] = [];
  readonly credentials: { root: string; username: string; password: string }[] = [];
  readonly failures = new Map<Method, CsiProxyError | Error>();

  #fail(method: Method): void {
    const err = this.failures.get(method);
    if (err) {
      this.failures.delete(method);
      throw err;
    }
  }

  /** Test setup: a mapping that exists already (e.g. made by another tool). */
  addMapping(root: string, status = "OK", reachable = true): this {
    this.mappings.set(root, { status, reachable, username: "", requirePrivacy: true });
    return this;
  }

  async getMapping(root: string) {
    this.calls.push(`getMapping ${root}`);
    this.#fail("getMapping");
    const m = this.mappings.get(root);
    return m ? { status: m.status } : null;
  }
  async getMappings(roots: readonly string[]) {
    this.calls.push(`getMappings ${roots.length}`);
    this.#fail("getMappings");
    const found = new Map<string, { status: string }>();
    for (const root of roots) {
      const m = this.mappings.get(root);
      if (m) found.set(root, { status: m.status });
    }
    return found;
  }
  async createMapping(root: string, username: string, password: string, requirePrivacy: boolean) {
    this.calls.push(`createMapping ${root} user=${username} privacy=${requirePrivacy}`);
    this.#fail("createMapping");
    if (this.mappings.has(root)) throw alreadyExists(`mapping ${root} exists`);
    this.credentials.push({ root, username, password });
    this.mappings.set(root, { status: "OK", reachable: true, username, requirePrivacy });
  }
  async removeMapping(root: string) {
    this.calls.push(`removeMapping ${root}`);
    this.#fail("removeMapping");
    if (!this.mappings.delete(root)) throw notFound(`mapping ${root}: not found`);
  }
  async isPathValid(path: string) {
    this.calls.push(`isPathValid ${path}`);
    this.#fail("isPathValid");
    const m = this.mappings.get(path);
    return m !== undefined && m.reachable;
  }
  async createDirLink(linkPath: string, remotePath: string) {
    this.calls.push(`createDirLink ${linkPath} -> ${remotePath}`);
    this.#fail("createDirLink");
    if (this.entries.has(linkPath)) throw alreadyExists(`${linkPath}: exists`);
    this.entries.set(linkPath, this.linkTargetFor(remotePath));
  }
  async readDirLink(linkPath: string) {
    this.#fail("readDirLink");
    if (!this.entries.has(linkPath)) return null;
    return { target: this.entries.get(linkPath) ?? null };
  }
  linkTargetFor(remotePath: string): string {
    return `${remotePath}\\`;
  }
  /** Test helper: what a driver's filesystem Rmdir of the link does. */
  removeLink(linkPath: string): void {
    this.entries.delete(linkPath);
  }
}
