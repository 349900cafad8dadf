/**
 * The SMB group across restarts (src/groups/smb/smb-group.ts: the state loaded, then reconciled, as
 * compose builds it): counts recovered, stale uses dropped, interrupted removals finished, and every
 * call refused — nothing unmapped — when the state file or directory cannot be trusted.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { Code, internal } from "../../errors.ts";
import { FakeSmbHost } from "../../../test/doubles/fake-smb-host.ts";
import { createJsonStateFile } from "../../state/atomic-file.ts";
import { guardStateFile } from "../../state/state-dir.ts";
import { StateDirRefusal } from "../../state/state-dir-trust.ts";
import { validateSmbState } from "./smb-state.ts";
import { createSmbGroup } from "./smb-group.ts";
import { rejectsWithCsiProxyError } from "../../../test/helpers/assert-coded.ts";
import { ROOT, linuxPolicy, local, memoryState, req, setupSmb } from "../../../test/helpers/smb-group-setup.ts";

describe("persistence and start-up reconciliation", () => {
  it("after reconciliation, has the host sweep mapping directories of the roots still recorded only", async () => {
    const host = new FakeSmbHost();
    const state = memoryState();
    const first = await setupSmb({ host, state });
    await first.smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
    await first.smb.newSmbGlobalMapping(req("\\\\other\\gone\\b", local("b")));
    first.smb.close();
    host.entries.delete(local("b")); // its link vanished while the daemon was down: the use is stale, the root torn down
    const swept: string[][] = [];
    const sweeping = Object.assign(host, { removeUnusedMappingDirs: async (roots: readonly string[]) => (swept.push([...roots]), ["x-0123456789abcdef"]) });
    const second = await setupSmb({ host: sweeping, state });
    assert.deepEqual(swept, [[ROOT]], "called once, with the roots left after the stale use was dropped");
    assert.ok(second.logs.some((l) => /removed 1 mapping directory no share root uses: x-0123456789abcdef/.test(l)), second.logs.join("\n"));
    second.smb.close();
  });

  it("recovers counts after a restart (same state file, same host)", async () => {
    const host = new FakeSmbHost();
    const state = memoryState();
    const first = await setupSmb({ host, state });
    await first.smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
    await first.smb.newSmbGlobalMapping(req("\\\\server\\share\\b", local("b")));
    first.smb.close();

    const second = await setupSmb({ host, state });
    assert.deepEqual(second.smb.references(), { [ROOT]: 2 });
    assert.ok(second.logs.some((l) => l.includes("2 use(s) recovered, mapping present (OK)")));
    await second.smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a"))); // retry after restart: idempotent
    assert.deepEqual(second.smb.references(), { [ROOT]: 2 });
    await second.smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\a" });
    assert.ok(host.mappings.has(ROOT));
    await second.smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\b" });
    assert.equal(host.mappings.size, 0);
  });

  it("after a reboot (mapping gone, links kept) the next call re-creates the mapping without counting twice", async () => {
    const host = new FakeSmbHost();
    const state = memoryState();
    const first = await setupSmb({ host, state });
    await first.smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
    host.mappings.clear();
    const second = await setupSmb({ host, state });
    assert.ok(second.logs.some((l) => l.includes("absent until the next NewSmbGlobalMapping")));
    await second.smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
    assert.ok(host.mappings.has(ROOT));
    assert.deepEqual(second.smb.references(), { [ROOT]: 1 });
  });

  it("at start drops uses whose links vanished and finishes interrupted removals", async () => {
    const host = new FakeSmbHost().addMapping(ROOT).addMapping("\\\\server\\other");
    host.entries.set(local("live"), "\\\\server\\share\\live\\");
    const state = memoryState({
      version: 1,
      roots: {
        [ROOT]: {
          users: [
            { id: `link:${local("live")}`, remotePath: "\\\\server\\share\\live", localPath: local("live"), since: "2024-01-01T00:00:00Z" },
            { id: `link:${local("gone")}`, remotePath: "\\\\server\\share\\gone", localPath: local("gone"), since: "2024-01-01T00:00:00Z" },
          ],
        },
        "\\\\server\\other": { users: [], removing: true },
      },
    });
    const { smb } = await setupSmb({ host, state });
    assert.deepEqual(smb.references(), { [ROOT]: 1 });
    assert.deepEqual([...host.mappings.keys()], [ROOT]);
    assert.deepEqual(Object.keys(JSON.parse(state.text!).roots), [ROOT]);
  });

  it("a record without uses (and no interrupted removal) is forgotten without touching the host", async () => {
    const host = new FakeSmbHost().addMapping(ROOT);
    const state = memoryState({ version: 1, roots: { [ROOT]: { users: [] } } });
    await setupSmb({ host, state });
    assert.ok(host.mappings.has(ROOT), "a mapping nothing says is ours stays");
    assert.deepEqual(JSON.parse(state.text!).roots, {});
  });

  it("a failed new use during an interrupted removal keeps the removal owed", async () => {
    const host = new FakeSmbHost().addMapping(ROOT);
    host.failures.set("removeMapping", internal("busy")); // the start-up teardown fails
    const state = memoryState({ version: 1, roots: { [ROOT]: { users: [], removing: true } } });
    const { smb, logs } = await setupSmb({ host, state });
    assert.ok(logs.some((l) => l.startsWith(`W SMB ${ROOT}: sweep failed`)));
    host.failures.set("createDirLink", internal("symlink failed"));
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, local("a"))), Code.Internal);
    assert.deepEqual(JSON.parse(state.text!).roots[ROOT], { users: [], removing: true });
    await smb.removeSmbGlobalMapping({ remotePath: ROOT });
    assert.equal(host.mappings.size, 0);
    assert.deepEqual(JSON.parse(state.text!).roots, {});
  });

  it("an unreadable state file makes every call FailedPrecondition (never unmaps blindly)", async () => {
    for (const text of ["{broken", '{"version": 7, "roots": {}}', '{"version":1,"roots":{"\\\\\\\\Server\\\\x":{"users":[]}}}']) {
      const state = memoryState();
      state.text = text;
      const host = new FakeSmbHost().addMapping(ROOT);
      const { smb, logs } = await setupSmb({ host, state });
      await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT)), Code.FailedPrecondition, /SMB state file \/memory\/smb-state.json is unreadable/);
      await rejectsWithCsiProxyError(smb.removeSmbGlobalMapping({ remotePath: ROOT }), Code.FailedPrecondition);
      assert.ok(host.mappings.has(ROOT));
      assert.equal(state.text, text, "the file is left for the operator");
      assert.ok(logs.some((l) => l.startsWith("W SMB state file")));
    }
  });

  it("a refused state directory makes every call answer its FailedPrecondition as is (logged once, at start-up, by the check)", async () => {
    const refusal = new StateDirRefusal("state directory /x is owned by uid 65534 (nobody), ...; SMB calls are refused until this is fixed");
    const host = new FakeSmbHost().addMapping(ROOT);
    const { smb, logs } = await setupSmb({ host, state: guardStateFile(memoryState(), refusal) as ReturnType<typeof memoryState> });
    await assert.rejects(smb.newSmbGlobalMapping(req(ROOT)), (e) => e === refusal);
    await assert.rejects(smb.removeSmbGlobalMapping({ remotePath: ROOT }), (e) => e === refusal);
    assert.ok(host.mappings.has(ROOT), "no mapping is touched");
    assert.deepEqual(logs, [], "secureStateDir() logged it already");
  });

  it("a state file refused when read (e.g. a symbolic link) makes every call FailedPrecondition naming it", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "smb-state-"));
    try {
      const file = path.join(dir, "smb-mappings.json");
      await fs.writeFile(path.join(dir, "elsewhere.json"), '{"version":1,"roots":{}}');
      await fs.symlink(path.join(dir, "elsewhere.json"), file);
      const { smb, logs } = await setupSmb({ state: createJsonStateFile(file, validateSmbState) as ReturnType<typeof memoryState> });
      await rejectsWithCsiProxyError(smb.removeSmbGlobalMapping({ remotePath: ROOT }), Code.FailedPrecondition, /state file .*smb-mappings\.json is a symbolic link.*; SMB calls are refused until this is fixed/);
      assert.equal(logs.length, 1);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("writes the real state file atomically and reads it back after a restart", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "smb-state-"));
    try {
      const file = path.join(dir, "smb-mappings.json");
      const host = new FakeSmbHost();
      const mk = () =>
        createSmbGroup({ host, policy: linuxPolicy(), state: createJsonStateFile(file, validateSmbState), requirePrivacy: true, platform: "linux" });
      const a = await mk();
      await a.service.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a"), "user", "TopSecret-123"));
      const text = await fs.readFile(file, "utf8");
      assert.ok(!text.includes("TopSecret-123") && !text.includes('"user"'), "no credentials in the state file");
      assert.equal((await fs.stat(file)).mode & 0o777, 0o600);
      const b = await mk();
      assert.deepEqual(b.references.counts(), { [ROOT]: 1 });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
