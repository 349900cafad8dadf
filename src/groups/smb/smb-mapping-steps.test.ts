import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeSmbHost } from "../../../test/doubles/fake-smb-host.ts";
import { createKeyedMutex } from "../../util/keyed-mutex.ts";
import { failedPrecondition, internal } from "../../errors.ts";
import type { JsonStateFile } from "../../state/atomic-file.ts";
import { openSmbReferences } from "./smb-references.ts";
import { createSmbMappingSteps } from "./smb-mapping-steps.ts";
import { validateSmbState, type SmbState } from "./smb-state.ts";

const ROOT = "\\\\server\\share";

async function setup(host: FakeSmbHost, initial: SmbState = { version: 1, roots: {} }) {
  const mem: JsonStateFile<SmbState> & { text: string } = {
    path: "/memory/smb-state.json",
    text: JSON.stringify(initial),
    async load(): Promise<SmbState> {
      return validateSmbState(JSON.parse(mem.text));
    },
    async save(value: SmbState) {
      mem.text = JSON.stringify(value);
    },
  };
  const log = { info() {}, warning() {} };
  const refs = await openSmbReferences({ state: mem, locks: createKeyedMutex(), host, platform: "linux", log });
  return { mem, refs, steps: createSmbMappingSteps({ host, refs, requirePrivacy: false, log }) };
}

describe("SMB mapping steps", () => {
  it("ensure: reuses a healthy mapping, re-creates an unreachable or unhealthy one, creates a missing one", async () => {
    const host = new FakeSmbHost().addMapping(ROOT);
    const { steps } = await setup(host);
    assert.equal(await steps.ensure(ROOT, "u", "p"), false);
    host.mappings.get(ROOT)!.reachable = false;
    assert.equal(await steps.ensure(ROOT, "u", "p"), true);
    host.mappings.get(ROOT)!.status = "Disconnected";
    assert.equal(await steps.ensure(ROOT, "u", "p"), true);
    host.mappings.clear();
    let creating = 0;
    assert.equal(await steps.ensure(ROOT, "u", "p", () => creating++), true);
    assert.equal(creating, 1);
    assert.deepEqual(host.calls.filter((c) => /^(create|remove)/.test(c)), [
      `removeMapping ${ROOT}`,
      `createMapping ${ROOT} user=u privacy=false`,
      `removeMapping ${ROOT}`,
      `createMapping ${ROOT} user=u privacy=false`,
      `createMapping ${ROOT} user=u privacy=false`,
    ]);
  });

  it("tearDown: the removal is recorded before the host is asked, the record dropped after", async () => {
    const host = new FakeSmbHost().addMapping(ROOT);
    const { mem, refs, steps } = await setup(host, { version: 1, roots: { [ROOT]: { users: [] } } });
    const seen: unknown[] = [];
    const remove = host.removeMapping.bind(host);
    host.removeMapping = async (root) => (seen.push(JSON.parse(mem.text).roots[ROOT]), remove(root));
    await refs.withRoot(ROOT, () => steps.tearDown(ROOT));
    assert.deepEqual(seen, [{ users: [], removing: true }]);
    assert.deepEqual(JSON.parse(mem.text).roots, {});
    assert.equal(host.mappings.size, 0);
  });

  it("tearDown: a refusal of the host's query is the answer and the removal stays owed", async () => {
    const host = new FakeSmbHost().addMapping(ROOT);
    host.failures.set("getMapping", failedPrecondition("a link was planted"));
    const { mem, refs, steps } = await setup(host, { version: 1, roots: { [ROOT]: { users: [] } } });
    await assert.rejects(refs.withRoot(ROOT, () => steps.tearDown(ROOT)), /planted/);
    assert.deepEqual(JSON.parse(mem.text).roots[ROOT], { users: [], removing: true });
    assert.ok(host.mappings.has(ROOT));
  });

  it("rollBack says why a mapping is still there; retryRollBack finishes an owed one", async () => {
    const host = new FakeSmbHost().addMapping(ROOT);
    host.failures.set("removeMapping", internal("busy"));
    const { mem, refs, steps } = await setup(host, { version: 1, roots: { [ROOT]: { users: [], removing: true } } });
    assert.equal(await steps.rollBack(ROOT), "busy");
    assert.deepEqual(await refs.withRoot(ROOT, () => steps.retryRollBack(ROOT)), { done: true });
    assert.deepEqual(JSON.parse(mem.text).roots, {});
    assert.equal(await steps.rollBack(ROOT), null, "nothing mapped: nothing left");
  });
});
