import type { IscsiHostApi } from "../../src/groups/iscsi/host-api.ts";
import type { AuthenticationType, TargetPortal } from "../../src/groups/iscsi/types.ts";
import { CsiProxyError, Code, alreadyExists, notFound } from "../../src/errors.ts";

type Method = keyof IscsiHostApi;
const key = (p: TargetPortal) => `${p.targetAddress.toLowerCase()}:${p.targetPort}`;

/**
 * In-memory initiator plus targets for unit tests. `offer(portal, iqn, ...)` sets up what a portal's
 * target server offers (with optional CHAP credentials the target demands, and the name/secret
 * mutual CHAP expects); discovery makes offered targets known to the initiator, as both Windows
 * and open-iscsi do. `calls` records every call without secrets; `failures` makes the next call of
 * a method throw.
 */
export class FakeIscsiHost implements IscsiHostApi {
  readonly portals: TargetPortal[] = [];
  readonly offered = new Map<string, Map<string, { disks: string[]; chap?: { username: string; secret: string }; mutual?: boolean }>>();
  /** Targets the initiator knows (after discovery), by portal. */
  readonly known = new Map<string, Map<string, { connected: boolean; auth?: AuthenticationType }>>();
  mutualSecret = "";
  readonly calls: string[] = [];
  readonly failures = new Map<Method, Error>();

  #fail(method: Method): void {
    const err = this.failures.get(method);
    if (err) {
      this.failures.delete(method);
      throw err;
    }
  }

  offer(portal: TargetPortal, iqn: string, options: { disks?: string[]; chap?: { username: string; secret: string }; mutual?: boolean } = {}): this {
    if (!this.offered.has(key(portal))) this.offered.set(key(portal), new Map());
    this.offered.get(key(portal))!.set(iqn, { disks: options.disks ?? [], chap: options.chap, mutual: options.mutual });
    return this;
  }

  async listTargetPortals() {
    this.calls.push("listTargetPortals");
    this.#fail("listTargetPortals");
    return this.portals.map((p) => ({ ...p }));
  }
  async addTargetPortal(portal: TargetPortal) {
    this.calls.push(`addTargetPortal ${key(portal)}`);
    this.#fail("addTargetPortal");
    if (this.portals.some((p) => key(p) === key(portal))) throw alreadyExists(`portal ${key(portal)} exists`);
    this.portals.push({ ...portal });
  }
  async removeTargetPortal(portal: TargetPortal) {
    this.calls.push(`removeTargetPortal ${key(portal)}`);
    this.#fail("removeTargetPortal");
    const i = this.portals.findIndex((p) => key(p) === key(portal));
    if (i < 0) throw notFound(`portal ${key(portal)}: not found`);
    this.portals.splice(i, 1);
  }
  async discoverTargets(portal: TargetPortal) {
    this.calls.push(`discoverTargets ${key(portal)}`);
    this.#fail("discoverTargets");
    const offered = [...(this.offered.get(key(portal))?.keys() ?? [])];
    if (!this.known.has(key(portal))) this.known.set(key(portal), new Map());
    for (const iqn of offered) if (!this.known.get(key(portal))!.has(iqn)) this.known.get(key(portal))!.set(iqn, { connected: false });
    return offered;
  }
  async getTarget(portal: TargetPortal, iqn: string) {
    this.calls.push(`getTarget ${key(portal)} ${iqn}`);
    this.#fail("getTarget");
    const t = this.known.get(key(portal))?.get(iqn);
    return t ? { connected: t.connected } : null;
  }
  async connectTarget(portal: TargetPortal, iqn: string, auth: { type: AuthenticationType; chapUsername: string; chapSecret: string }) {
    this.calls.push(`connectTarget ${key(portal)} ${iqn} ${auth.type} user=${auth.chapUsername}`);
    this.#fail("connectTarget");
    const t = this.known.get(key(portal))?.get(iqn);
    if (!t) throw notFound(`target ${iqn}: not found`);
    if (t.connected) throw new CsiProxyError(Code.AlreadyExists, "session exists");
    const o = this.offered.get(key(portal))?.get(iqn);
    if (o?.chap && (auth.type === "NONE" || auth.chapUsername !== o.chap.username || auth.chapSecret !== o.chap.secret)) {
      throw new CsiProxyError(Code.PermissionDenied, "target rejected the CHAP credentials");
    }
    if (o?.mutual && (auth.type !== "MUTUAL_CHAP" || this.mutualSecret === "")) {
      throw new CsiProxyError(Code.PermissionDenied, "target demands mutual CHAP");
    }
    t.connected = true;
    t.auth = auth.type;
  }
  async disconnectTarget(portal: TargetPortal, iqn: string) {
    this.calls.push(`disconnectTarget ${key(portal)} ${iqn}`);
    this.#fail("disconnectTarget");
    const t = this.known.get(key(portal))?.get(iqn);
    if (!t?.connected) throw notFound("no session");
    t.connected = false;
  }
  async getTargetDisks(portal: TargetPortal, iqn: string) {
    this.calls.push(`getTargetDisks ${key(portal)} ${iqn}`);
    this.#fail("getTargetDisks");
    return [...(this.offered.get(key(portal))?.get(iqn)?.disks ?? [])];
  }
  async setMutualChapSecret(secret: string) {
    this.calls.push("setMutualChapSecret");
    this.#fail("setMutualChapSecret");
    this.mutualSecret = secret;
  }
}
