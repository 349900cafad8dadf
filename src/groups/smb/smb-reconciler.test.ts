import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { FakeSmbHost } from "../../../test/doubles/fake-smb-host.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import type { JsonStateFile } from "../../state/atomic-file.ts";
import { openSmbReferences } from "./smb-references.ts";
import { createSmbMappingSteps } from "./smb-mapping-steps.ts";
import { createSmbReconciler } from "./smb-reconciler.ts";
import { validateSmbState, type SmbState } from "./smb-state.ts";

const KUBELET = "/var/lib/kubelet";
const local = (i: number) => `${KUBELET}/pods/p${i}/volumes/smb/mount`;
const rootOf = (i: number) => `\\\\server${i}\\share`;

/** A state file in memory counting its reads and writes. */
function memoryState(initial: SmbState): JsonStateFile<SmbState> & { text: string; loads: number; saves: number } {
  const mem = {
    path: "/memory/smb-state.json",
    text: JSON.stringify(initial),
    loads: 0,
    saves: 0,
    async load() {
      mem.loads++;
      return validateSmbState(JSON.parse(mem.text));
    },
    async save(value: SmbState) {
      mem.saves++;
      mem.text = JSON.stringify(value);
    },
  };
  return mem;
}

/** `n` roots with one use each, whose local links are all gone (what the node-scale benchmark's state was). */
function staleState(n: number): SmbState {
  const roots: SmbState["roots"] = {};
  for (let i = 0; i < n; i++) {
    roots[rootOf(i)] = { users: [{ id: `link:${local(i)}`, remotePath: `${rootOf(i)}\\d`, localPath: local(i), since: "2026-01-01T00:00:00Z" }] };
  }
  return { version: 1, roots };
}

async function reconciler(host: FakeSmbHost, state: JsonStateFile<SmbState>) {
  const logs: string[] = [];
  const log = { info: (m: string) => logs.push(`I ${m}`), warning: (m: string) => logs.push(`W ${m}`) };
  const refs = await openSmbReferences({ state, locks: createKeyedMutex(), host, platform: "linux", log });
  const steps = createSmbMappingSteps({ host, refs, requirePrivacy: true, log });
  return { refs, logs, reconciler: createSmbReconciler({ host, refs, steps, log }) };
}

describe("start-up reconciliation is bounded by one listing and one write, not a step per entry", () => {
  it("500 uses whose links are gone: one listing of the host's mappings, one state write, no per-root host query", async () => {
    const host = new FakeSmbHost();
    const state = memoryState(staleState(500));
    const { reconciler: r, refs } = await reconciler(host, state);
    await r.reconcile();
    assert.deepEqual(JSON.parse(state.text).roots, {}, "every stale use and its root dropped");
    assert.deepEqual(refs.counts(), {});
    assert.equal(state.saves, 1, "one write for every root");
    assert.ok(state.loads <= 6, `state file read ${state.loads} times: a constant, not one per root`);
    assert.deepEqual(host.calls, ["getMappings 500"], "no getMapping or removal per root: none is mapped");
  });

  it("only roots the host still maps cost a removal each", async () => {
    const host = new FakeSmbHost().addMapping(rootOf(7)).addMapping(rootOf(300)).addMapping("\\\\other\\kept");
    const state = memoryState(staleState(500));
    const { reconciler: r } = await reconciler(host, state);
    await r.reconcile();
    assert.deepEqual([...host.mappings.keys()], ["\\\\other\\kept"], "the two stale roots' mappings removed, a mapping not recorded kept");
    assert.deepEqual(host.calls.filter((c) => c.startsWith("removeMapping")).sort(), [`removeMapping ${rootOf(300)}`, `removeMapping ${rootOf(7)}`]);
    assert.equal(host.calls.filter((c) => c.startsWith("getMapping ")).length, 2, "a lookup only before each removal");
    assert.deepEqual(JSON.parse(state.text).roots, {});
    assert.ok(state.saves <= 5, `${state.saves} writes: one for all, two per removal`);
  });

  it("live uses: no lock, no write, and the start-up report comes from one listing", async () => {
    const host = new FakeSmbHost();
    const initial = staleState(200);
    for (let i = 0; i < 200; i++) host.entries.set(local(i), host.linkTargetFor(`${rootOf(i)}\\d`));
    host.addMapping(rootOf(0));
    const state = memoryState(initial);
    const { reconciler: r, refs, logs } = await reconciler(host, state);
    await r.reconcile();
    assert.equal(state.saves, 0);
    assert.equal(Object.keys(refs.counts()).length, 200);
    assert.deepEqual(host.calls, ["getMappings 200"]);
    assert.ok(logs.includes(`I SMB ${rootOf(0)}: 1 use(s) recovered, mapping present (OK)`));
    assert.ok(logs.includes(`I SMB ${rootOf(1)}: 1 use(s) recovered, mapping absent until the next NewSmbGlobalMapping for it`));
  });

  it("a failed listing falls back to a lookup per root to be removed, and says so", async () => {
    const host = new FakeSmbHost().addMapping(rootOf(1));
    host.failures.set("getMappings", new Error("worker gone"));
    const state = memoryState(staleState(3));
    const { reconciler: r, logs } = await reconciler(host, state);
    await r.sweep();
    assert.equal(host.mappings.size, 0);
    assert.deepEqual(JSON.parse(state.text).roots, {});
    assert.ok(logs.some((l) => /W SMB: listing the host's mappings failed \(worker gone\)/.test(l)), logs.join("\n"));
  });
});

describe("the timer", () => {
  it("start() sweeps periodically until stop()", async () => {
    const host = new FakeSmbHost();
    const initial = staleState(2);
    for (let i = 0; i < 2; i++) host.entries.set(local(i), host.linkTargetFor(`${rootOf(i)}\\d`));
    const state = memoryState(initial);
    const { reconciler: r, refs } = await reconciler(host, state);
    await r.reconcile();
    r.start(10);
    r.start(10); // idempotent: one timer
    host.removeLink(local(0));
    for (let waited = 0; refs.counts()[rootOf(0)] !== undefined && waited < 5000; waited += 20) await sleep(20);
    assert.deepEqual(refs.counts(), { [rootOf(1)]: 1 }, "the use whose link went was dropped by the timer");
    r.stop();
    host.removeLink(local(1));
    await sleep(100);
    assert.deepEqual(refs.counts(), { [rootOf(1)]: 1 }, "no sweep after stop()");
  });
});
