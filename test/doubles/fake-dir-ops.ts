/**
 * An in-memory tree behind the recursive delete's directory operations (src/host/tree-walker.ts
 * DirOps), for the walker's own tests. Directories, files and mount points are nodes with a numeric
 * identity; a handle refers to the node it opened (as a real handle does, whatever is renamed
 * later). The double checks the walk's side of the contract and records what it saw:
 * - a handle used or closed after it was closed throws (`misuse` lists it too);
 * - `open` holds the handles not yet closed, `maxOpen` the most at once;
 * - `wants` every listing pass's `want`, `maxOutstanding` the most names listed and not yet acted on;
 * - `removed` the paths removed, in order; `calls` counts every operation;
 * - `before(op, shown)` runs before each operation (tests move things or abort from it).
 */
import { Code, CsiProxyError } from "../../src/errors.ts";
import type { DirOps, ListedEntry, Opened } from "../../src/host/tree-walker.ts";

export type FakeNode = FakeDir | { kind: "file"; id: number } | { kind: "mount"; id: number };
export interface FakeDir {
  kind: "dir";
  id: number;
  children: Map<string, FakeNode>;
  parent: FakeDir | null;
}
export interface FakeHandle {
  n: number;
  node: FakeDir;
  closed: boolean;
}

let ids = 1;
export const dir = (children: Record<string, FakeNode> = {}): FakeDir => {
  const d: FakeDir = { kind: "dir", id: ids++, children: new Map(), parent: null };
  for (const [name, c] of Object.entries(children)) put(d, name, c);
  return d;
};
export const file = (): FakeNode => ({ kind: "file", id: ids++ });
export const mount = (): FakeNode => ({ kind: "mount", id: ids++ });

/** Puts `node` at `name` in `parent` (replacing what was there). */
export function put(parent: FakeDir, name: string, node: FakeNode): void {
  parent.children.set(name, node);
  if (node.kind === "dir") node.parent = parent;
}

/** Entries below `d`, all levels. */
export function countBelow(d: FakeDir): number {
  let n = 0;
  for (const c of d.children.values()) n += 1 + (c.kind === "dir" ? countBelow(c) : 0);
  return n;
}

export interface FakeDirOps extends DirOps<FakeHandle, number> {
  open: Set<FakeHandle>;
  maxOpen: number;
  misuse: string[];
  wants: number[];
  maxOutstanding: number;
  removed: string[];
  calls: number;
  before?: (op: string, shown: string) => void;
  /** Opens the named directory at `shown` (as the caller of the walk does). */
  openRoot(shown: string): { h: FakeHandle; id: number };
}

/** The operations over the tree whose top is `world` (`/` of the shown paths). */
export function fakeDirOps(world: FakeDir): FakeDirOps {
  let n = 1;
  const outstanding = new Set<string>();
  const resolve = (shown: string): FakeNode | undefined => {
    let cur: FakeNode | undefined = world;
    for (const c of shown.split("/").filter(Boolean)) cur = cur?.kind === "dir" ? cur.children.get(c) : undefined;
    return cur;
  };
  const live = (h: FakeHandle, op: string) => {
    if (h.closed) {
      ops.misuse.push(`${op} on closed handle ${h.n}`);
      throw new Error(`${op} on closed handle ${h.n}`);
    }
    return h.node;
  };
  const hold = (node: FakeDir): FakeHandle => {
    const h = { n: n++, node, closed: false };
    ops.open.add(h);
    ops.maxOpen = Math.max(ops.maxOpen, ops.open.size);
    return h;
  };
  const step = (op: string, shown: string) => {
    ops.calls++;
    ops.before?.(op, shown);
  };
  const acted = (parent: FakeDir, name: string) => outstanding.delete(`${parent.id}/${name}`);
  const ops: FakeDirOps = {
    sep: "/",
    unlinksInFlight: 4,
    open: new Set(),
    maxOpen: 0,
    misuse: [],
    wants: [],
    maxOutstanding: 0,
    removed: [],
    calls: 0,
    openRoot(shown) {
      const node = resolve(shown);
      if (node?.kind !== "dir") throw new Error(`${shown} is not a directory`);
      return { h: hold(node), id: node.id };
    },
    same: (a, b) => a === b,
    async list(h, _id, want, skip, shown, stop) {
      step("list", shown);
      stop();
      const d = live(h, "list");
      ops.wants.push(want);
      const entries: ListedEntry[] = [];
      let end = true;
      for (const [name, c] of d.children) {
        if (skip?.has(name)) continue;
        if (entries.length >= want) {
          end = false;
          break;
        }
        entries.push({ name, dir: c.kind !== "file" });
        outstanding.add(`${d.id}/${name}`);
      }
      ops.maxOutstanding = Math.max(ops.maxOutstanding, outstanding.size);
      return { entries, end };
    },
    async openChild(parent, _parentId, name, shown): Promise<Opened<FakeHandle, number>> {
      step("openChild", shown);
      const d = live(parent, "openChild");
      acted(d, name);
      const c = d.children.get(name);
      if (c === undefined) return { kind: "missing" };
      if (c.kind === "file") return { kind: "other" };
      if (c.kind === "mount") return { kind: "mount" };
      return { kind: "dir", h: hold(c), id: c.id };
    },
    async unlink(parent, name, shown) {
      step("unlink", shown);
      const d = live(parent, "unlink");
      acted(d, name);
      const c = d.children.get(name);
      if (c === undefined) return "missing";
      if (c.kind !== "file") return "dir";
      d.children.delete(name);
      ops.removed.push(shown);
      return "gone";
    },
    async removeDir(parent, name, child, shown) {
      try {
        step("removeDir", shown);
        const d = live(parent, "removeDir");
        live(child, "removeDir");
        const c = d.children.get(name);
        if (c === undefined) return "missing";
        if (c.kind === "file") return "link";
        if (c.kind === "dir" && c.children.size > 0) throw new CsiProxyError(Code.FailedPrecondition, `remove ${shown}: directory not empty`);
        d.children.delete(name);
        ops.removed.push(shown);
        return "gone";
      } finally {
        await ops.close(child);
      }
    },
    async reopen(child, shown) {
      step("reopen", shown);
      live(child, "reopen");
      const node = resolve(shown);
      if (node === undefined) return null;
      if (node.kind !== "dir") throw new CsiProxyError(Code.FailedPrecondition, `${shown} is not a directory now`);
      return { h: hold(node), id: node.id };
    },
    async whyNotNamed(h, id, shown) {
      step("whyNotNamed", shown);
      live(h, "whyNotNamed");
      const node = resolve(shown);
      if (node === undefined) return "it is gone";
      return node.id === id ? null : "it is another entry now";
    },
    async leftIn(h, shown) {
      const d = live(h, "leftIn");
      const names = [...d.children.keys()];
      return { there: resolve(shown) === d, left: `${names.length} entries left in it (${names.slice(0, 3).join(", ")})` };
    },
    async close(h) {
      live(h, "close");
      h.closed = true;
      ops.open.delete(h);
    },
  };
  return ops;
}
