import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { FakeSmbHost } from "../../../test/doubles/fake-smb-host.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { runInCall } from "../../util/call-scope.ts";
import type { JsonStateFile } from "../../state/atomic-file.ts";
import { openSmbReferences } from "./smb-references.ts";
import { validateSmbState, type SmbState } from "./smb-state.ts";

const A = "\\\\server\\a";
const B = "\\\\server\\b";
const use = (root: string, localPath?: string) => ({ id: localPath ? `link:${localPath}` : `call:${root}`, remotePath: `${root}\\sub`, since: "2026-01-01T00:00:00Z", ...(localPath ? { localPath } : {}) });

function memoryState(initial: SmbState): JsonStateFile<SmbState> & { text: string; saves: number } {
  const mem = {
    path: "/memory/smb-state.json",
    text: JSON.stringify(initial),
    saves: 0,
    async load() {
      return validateSmbState(JSON.parse(mem.text));
    },
    async save(value: SmbState) {
      mem.saves++;
      mem.text = JSON.stringify(value);
    },
  };
  return mem;
}

const quiet = { info() {}, warning() {} };

describe("SMB reference counts", () => {
  it("each turn on a root starts from the file's record; a save replaces only that root's record", async () => {
    const state = memoryState({ version: 1, roots: { [A]: { users: [use(A)] } } });
    const refs = await openSmbReferences({ state, locks: createKeyedMutex(), host: new FakeSmbHost(), platform: "linux", log: quiet });
    assert.deepEqual(refs.counts(), { [A]: 1 });
    // another process adds a use of A and a root B behind our back
    state.text = JSON.stringify({ version: 1, roots: { [A]: { users: [use(A), use(A, "/k/x")] }, [B]: { users: [use(B)] } } });
    await refs.withRoot(A, async () => {
      assert.equal(refs.record(A)?.users.length, 2, "A's record taken from the file");
      refs.record(A)!.users.pop();
      await refs.save(A);
    });
    assert.deepEqual(Object.keys(JSON.parse(state.text).roots).sort(), [A, B], "B, which we never held, is kept");
    assert.equal(JSON.parse(state.text).roots[A].users.length, 1);
  });

  it("saveRoots writes several roots' records, forgotten ones removed, in one write", async () => {
    const state = memoryState({ version: 1, roots: { [A]: { users: [use(A)] }, [B]: { users: [use(B)] } } });
    const refs = await openSmbReferences({ state, locks: createKeyedMutex(), host: new FakeSmbHost(), platform: "linux", log: quiet });
    await refs.withRoots([A, B], async () => {
      refs.forget(A);
      refs.ensure(B).removing = true;
      await refs.saveRoots([A, B]);
    });
    assert.equal(state.saves, 1);
    assert.deepEqual(JSON.parse(state.text).roots, { [B]: { users: [use(B)], removing: true } });
  });

  it("a save finishes even when the call's deadline passes while it waits for the state file's lock", async () => {
    const state = memoryState({ version: 1, roots: { [A]: { users: [use(A)] } } });
    const locks = createKeyedMutex();
    const refs = await openSmbReferences({ state, locks, host: new FakeSmbHost(), platform: "linux", log: quiet });
    let release = () => {};
    const holding = locks.run("smb-state", () => new Promise<void>((resolve) => (release = resolve)));
    refs.forget(A);
    const saving = runInCall({ signal: AbortSignal.timeout(20) }, () => refs.save(A));
    await sleep(100);
    release();
    await holding;
    await saving;
    assert.deepEqual(JSON.parse(state.text).roots, {}, "the record of work already done was written");
  });

  it("stale: link gone, not a link, or pointing elsewhere; a use without a link, or a read error, is live", async () => {
    const host = new FakeSmbHost();
    const refs = await openSmbReferences({ state: memoryState({ version: 1, roots: {} }), locks: createKeyedMutex(), host, platform: "linux", log: quiet });
    host.entries.set("/k/ok", host.linkTargetFor(`${A}\\sub`) + "/");
    host.entries.set("/k/dir", null);
    host.entries.set("/k/other", host.linkTargetFor(`${B}\\sub`));
    assert.equal(await refs.isStale(use(A, "/k/ok")), false);
    assert.equal(await refs.isStale(use(A, "/k/gone")), true);
    assert.equal(await refs.isStale(use(A, "/k/dir")), true);
    assert.equal(await refs.isStale(use(A, "/k/other")), true);
    assert.equal(await refs.isStale(use(A)), false);
    host.failures.set("readDirLink", new Error("EIO"));
    assert.equal(await refs.isStale(use(A, "/k/gone")), false);
  });

  it("Windows: link texts compare without case and without the \\\\?\\ prefix", async () => {
    const host = new FakeSmbHost();
    const refs = await openSmbReferences({ state: memoryState({ version: 1, roots: {} }), locks: createKeyedMutex(), host, platform: "win32", log: quiet });
    assert.equal(refs.linksTo(`\\\\?\\${host.linkTargetFor(`${A}\\SUB`)}`, `${A}\\sub`), true);
    const linux = await openSmbReferences({ state: memoryState({ version: 1, roots: {} }), locks: createKeyedMutex(), host, platform: "linux", log: quiet });
    assert.equal(linux.linksTo(host.linkTargetFor(`${A}\\SUB`), `${A}\\sub`), false);
  });

  it("an unreadable file refuses: usable() throws FailedPrecondition, the refusal is logged once", async () => {
    const state = memoryState({ version: 1, roots: {} });
    state.text = "{broken";
    const logs: string[] = [];
    const refs = await openSmbReferences({ state, locks: createKeyedMutex(), host: new FakeSmbHost(), platform: "linux", log: { info() {}, warning: (m) => logs.push(m) } });
    assert.equal(refs.refused, true);
    assert.throws(() => refs.usable(), /SMB state file \/memory\/smb-state.json is unreadable/);
    assert.equal(logs.length, 1);
  });
});
