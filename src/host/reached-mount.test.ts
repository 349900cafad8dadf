import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MAX_LINKS, reachedMount, type ReachOptions } from "./reached-mount.ts";
import { mountPointOf } from "./mount-gate.ts";

/** A tree of links over mounts `/`, `/mnt/dead`, `/mnt/ok`; `silent` mounts are not responding. Records every look-up with its mount. */
function world(links: Record<string, string>, options: { silent?: string[]; missing?: string[] } = {}) {
  const looked: string[] = [];
  const mounts = ["/", "/mnt/dead", "/mnt/ok"];
  const o: ReachOptions = {
    mountOf: async (p) => mountPointOf(mounts, p),
    readLink: async (p) => {
      if (options.missing?.some((m) => p === m || p.startsWith(`${m}/`))) throw Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
      return links[p] ?? null;
    },
    isSilent: (m) => options.silent?.includes(m) ?? false,
    lookAt: async (m, op) => {
      looked.push(m);
      return op();
    },
  };
  return { o, looked };
}

describe("reachedMount", () => {
  it("a link on / into another mount: the call reaches that mount, each look-up counted where its component lies", async () => {
    const { o, looked } = world({ "/kubelet/pods/link": "/mnt/dead/dir" });
    assert.equal(await reachedMount("/kubelet/pods/link/sub/x", o), "/mnt/dead");
    assert.deepEqual(looked, ["/", "/", "/", "/", "/mnt/dead", "/mnt/dead", "/mnt/dead", "/mnt/dead"]);
  });

  it("relative links, .. and chains of links are followed as the kernel does", async () => {
    const { o } = world({ "/a/rel": "../mnt/ok", "/a/chain": "/a/rel/x", "/mnt/ok/x": "/mnt/dead" });
    assert.equal(await reachedMount("/a/rel/y", o), "/mnt/ok");
    assert.equal(await reachedMount("/a/chain/y", o), "/mnt/dead");
    assert.equal(await reachedMount("/mnt/dead/../ok/z", o), "/mnt/ok");
  });

  it("never looks into a mount marked not responding: that mount is the answer", async () => {
    const { o, looked } = world({ "/kubelet/link": "/mnt/dead/dir" }, { silent: ["/mnt/dead"] });
    assert.equal(await reachedMount("/kubelet/link/sub", o), "/mnt/dead");
    assert.deepEqual(looked, ["/", "/", "/"], "only the components on / were looked at (/kubelet, its link, /mnt)");
  });

  it("followLast: false leaves the last component unfollowed (lstat, symlink)", async () => {
    const { o } = world({ "/kubelet/link": "/mnt/dead/dir" }, { silent: ["/mnt/dead"] });
    assert.equal(await reachedMount("/kubelet/link", o, { followLast: false }), "/");
    assert.equal(await reachedMount("/kubelet/link", o), "/mnt/dead");
  });

  it("a missing component: the rest is lexical from there", async () => {
    const { o } = world({}, { missing: ["/new"] });
    assert.equal(await reachedMount("/new/mnt/ok", o), "/");
    const m = world({ "/l": "/mnt/ok/new" }, { missing: ["/mnt/ok/new"] });
    assert.equal(await reachedMount("/l/a/b", m.o), "/mnt/ok");
  });

  it("the gate's refusal of a component's mount: the call reaches that mount", async () => {
    const { o } = world({ "/l": "/mnt/dead/d" });
    o.lookAt = async (m, op) => {
      if (m === "/mnt/dead") throw new Error("no host operation could start under /mnt/dead");
      return op();
    };
    assert.equal(await reachedMount("/l/x", o), "/mnt/dead");
  });

  it("a kept look-up is used without looking again (no slot taken)", async () => {
    const { o, looked } = world({});
    o.known = (p) => (p === "/kubelet/link" ? "/mnt/dead/dir" : p === "/kubelet" ? null : undefined);
    assert.equal(await reachedMount("/kubelet/link/x", o), "/mnt/dead");
    assert.deepEqual(looked, ["/", "/mnt/dead", "/mnt/dead", "/mnt/dead"], "only /mnt, /mnt/dead, its dir and x were looked up; /kubelet and its link were kept");
  });

  it(`a loop of links ends after ${MAX_LINKS} links`, async () => {
    const { o, looked } = world({ "/a": "/b", "/b": "/a" });
    assert.equal(await reachedMount("/a/x", o), "/");
    assert.ok(looked.length <= MAX_LINKS + 2);
  });
});
