import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { Code, CsiProxyError, internal } from "../../errors.ts";
import { FakeSmbHost } from "../../../test/doubles/fake-smb-host.ts";
import type { JsonStateFile } from "../../state/atomic-file.ts";
import { createPathPolicy } from "../../policy/path-policy.ts";
import { createRefCountedSmb } from "../../../test/helpers/ref-counted-smb.ts";
import type { SmbState } from "./smb-state.ts";
import { rejectsWithCsiProxyError } from "../../../test/helpers/assert-coded.ts";
import { holdPoint } from "../../../test/helpers/hold-point.ts";
import { setTimeout as sleep } from "node:timers/promises";
import { createKeyedMutex, type KeyedMutex } from "../../util/keyed-mutex.ts";
import { createSmbService } from "./smb-service.ts";
import { KUBELET, ROOT, linuxPolicy, local, memoryState, req, setupSmb } from "../../../test/helpers/smb-group-setup.ts";
import { openSmbReferences } from "./smb-references.ts";
import { createSmbMappingSteps } from "./smb-mapping-steps.ts";
import type { SmbService } from "./types.ts";
import { createNodeLocks } from "../../state/node-locks.ts";

describe("NewSmbGlobalMapping: upstream semantics", () => {
  it("maps the lower-cased share root and links local_path to the full remote path", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req("//Server/Share/Sub/Dir", local("a")));
    assert.deepEqual([...host.mappings.keys()], [ROOT]);
    assert.equal(host.entries.get(local("a")), "\\\\Server\\Share\\Sub\\Dir\\");
    assert.deepEqual(host.credentials, [{ root: ROOT, username: "user", password: "Pa55-w0rd!" }]);
    assert.deepEqual(smb.references(), { [ROOT]: 1 });
  });

  it("passes -require-privacy through", async () => {
    for (const requirePrivacy of [true, false]) {
      const { host, smb } = await setupSmb({ requirePrivacy });
      await smb.newSmbGlobalMapping(req("\\\\srv\\s"));
      assert.equal(host.mappings.get("\\\\srv\\s")?.requirePrivacy, requirePrivacy);
    }
  });

  it("reuses a healthy mapping (the new call's credentials are ignored)", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
    await smb.newSmbGlobalMapping(req("\\\\SERVER\\SHARE\\b", local("b"), "other", "other-password"));
    assert.equal(host.calls.filter((c) => c.startsWith("createMapping")).length, 1);
    assert.equal(host.mappings.get(ROOT)?.username, "user");
    assert.deepEqual(smb.references(), { [ROOT]: 2 });
  });

  it("re-creates a mapping whose root is unreachable, one whose check throws, and one with a bad status", async () => {
    for (const breakIt of [
      (h: FakeSmbHost) => (h.mappings.get(ROOT)!.reachable = false),
      (h: FakeSmbHost) => h.failures.set("isPathValid", new Error("session broken")),
      (h: FakeSmbHost) => (h.mappings.get(ROOT)!.status = "Disconnected"),
    ]) {
      const { host, smb } = await setupSmb();
      await smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
      breakIt(host);
      host.calls.length = 0;
      await smb.newSmbGlobalMapping(req("\\\\server\\share\\b", local("b"), "new-user", "new-pass"));
      assert.deepEqual(host.calls.filter((c) => /Mapping/.test(c) && !c.startsWith("get")), [
        `removeMapping ${ROOT}`,
        `createMapping ${ROOT} user=new-user privacy=true`,
      ]);
      assert.equal(host.mappings.get(ROOT)?.status, "OK");
      assert.deepEqual(smb.references(), { [ROOT]: 2 });
    }
  });

  it("treats a failing mapping query as 'not mapped', as upstream", async () => {
    const { host, smb } = await setupSmb();
    host.failures.set("getMapping", new Error("WMI down"));
    await smb.newSmbGlobalMapping(req("\\\\server\\share"));
    assert.ok(host.mappings.has(ROOT));
  });

  it("creates no link when local_path is empty", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\x"));
    assert.equal(host.entries.size, 0);
  });
});

describe("NewSmbGlobalMapping: refusals (no host change, no count)", () => {
  const invalid: [string, string, RegExp | string][] = [
    ["empty", "", "remote path is empty"],
    ["server only", "\\\\server", "remote path (\\\\server) is invalid"],
    ["slashes only", "///", "remote path (///) is invalid"],
    ["newline", "\\\\server\\share\nx", /control characters/],
    ["NUL", "\\\\server\\sh\0are", /control characters/],
    ["bad server", "\\\\ser ver\\share", /not a host name/],
    ["server with $()", "\\\\$(id)\\share", /not a host name/],
    ["share with ;", "\\\\server\\sha;re", /invalid share name/],
    ["share with |", "\\\\server\\a|b", /invalid share name/],
    ["share ..", "\\\\server\\..", /invalid share name/],
    ["dot-dot below share", "\\\\server\\share\\..\\..\\etc", /invalid path component/],
    ["dot below share", "//server/share/./x", /invalid path component/],
    ["quote in path", "\\\\server\\share\\a\"b", /invalid path component/],
    ["too long", `\\\\server\\share\\${"a".repeat(100_000)}`, /exceeds maximum bytes: 4096/],
  ];
  for (const [name, remotePath, message] of invalid) {
    it(`remote path: ${name} → InvalidArgument`, async () => {
      const { host, smb, state } = await setupSmb();
      await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(remotePath, local("a"))), Code.InvalidArgument, message);
      await rejectsWithCsiProxyError(smb.removeSmbGlobalMapping({ remotePath }), Code.InvalidArgument, message);
      assert.deepEqual(host.calls, []);
      assert.equal(state.saves, 0);
    });
  }

  it("local path outside the allowed dirs → PermissionDenied; relative / NUL → InvalidArgument", async () => {
    const { host, smb } = await setupSmb();
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, "/etc/evil")), Code.PermissionDenied);
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, `${KUBELET}/../../etc/x`)), Code.PermissionDenied);
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, "relative/path")), Code.InvalidArgument);
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, `${KUBELET}/a\0b`)), Code.InvalidArgument);
    assert.deepEqual(host.calls, []);
    assert.deepEqual(smb.references(), {});
  });

  it("bad credentials → InvalidArgument, and the message never contains the password", async () => {
    const { host, smb } = await setupSmb();
    const secret = "s3cr3t\nline2";
    await assert.rejects(smb.newSmbGlobalMapping(req(ROOT, "", "user", secret)), (e: CsiProxyError) => {
      assert.equal(e.code, Code.InvalidArgument);
      assert.ok(!e.message.includes("s3cr3t"));
      return true;
    });
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, "", "user", "a\0b")), Code.InvalidArgument);
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, "", "user", "x".repeat(1025))), Code.InvalidArgument, /password is longer/);
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, "", "us\ner", "p")), Code.InvalidArgument, /username/);
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, "", "u".repeat(100_000), "p")), Code.InvalidArgument, /username is longer/);
    assert.deepEqual(host.calls, []);
  });

  it("an occupied local path → AlreadyExists, nothing mapped or counted", async () => {
    const { host, smb, state } = await setupSmb();
    host.entries.set(local("a"), null); // a directory
    host.entries.set(local("b"), "\\\\other\\share\\"); // a link elsewhere
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, local("a"))), Code.AlreadyExists, `local path ${local("a")} already exists and is not a link to ${ROOT} [upstream: ResourceExists]`);
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, local("b"))), Code.AlreadyExists);
    assert.equal(host.mappings.size, 0);
    assert.deepEqual(smb.references(), {});
    await smb.newSmbGlobalMapping(req("\\\\server\\other")); // a later save must not carry an empty record for ROOT
    assert.deepEqual(Object.keys(JSON.parse(state.text!).roots), ["\\\\server\\other"]);
  });

  it("a host failure withdraws the use and removes a mapping made for it alone", async () => {
    const { host, smb, state } = await setupSmb();
    host.failures.set("createDirLink", internal("symlink failed"));
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, local("a"))), Code.Internal, "symlink failed");
    assert.equal(host.mappings.size, 0);
    assert.deepEqual(smb.references(), {});
    assert.deepEqual(JSON.parse(state.text!).roots, {});

    host.failures.set("createMapping", internal("access denied by server"));
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, local("a"))), Code.Internal);
    assert.deepEqual(smb.references(), {});
  });

  it("a rollback that fails is named in the answer, kept owed, and retried until the mapping is gone", async () => {
    const { host, smb, state, logs } = await setupSmb();
    host.failures.set("createDirLink", internal("symlink failed"));
    host.failures.set("removeMapping", internal("device busy"));
    await rejectsWithCsiProxyError(
      smb.newSmbGlobalMapping(req(ROOT, local("a"))),
      Code.Internal,
      /symlink failed; the mapping of \\\\server\\share this call made could not be removed \(.*device busy\): it is still mapped at .*; csi-proxy retries removing it \(7 attempts/,
    );
    assert.ok(host.mappings.has(ROOT), "left, as the answer says");
    assert.deepEqual(JSON.parse(state.text!).roots[ROOT], { users: [], removing: true });
    for (let i = 0; i < 100 && host.mappings.size; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(host.mappings.size, 0, "the retry removed it");
    assert.deepEqual(JSON.parse(state.text!).roots, {});
    assert.ok(logs.some((l) => l === `I cleanup retry 1/7 of SMB mapping ${ROOT}: done, nothing left`), logs.join("\n"));
  });

  it("a host failure for a second user keeps the first user's mapping", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req(ROOT, local("a")));
    host.failures.set("createDirLink", internal("symlink failed"));
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, local("b"))), Code.Internal);
    assert.ok(host.mappings.has(ROOT));
    assert.deepEqual(smb.references(), { [ROOT]: 1 });
  });
});

describe("reference counting", () => {
  it("removes the mapping only when the last user releases it; then NotFound", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\b", local("b")));
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\c"));
    assert.deepEqual(smb.references(), { [ROOT]: 3 });
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\c" });
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\a" });
    assert.ok(host.mappings.has(ROOT), "still used by b");
    assert.deepEqual(smb.references(), { [ROOT]: 1 });
    await smb.removeSmbGlobalMapping({ remotePath: "//SERVER/share/b" });
    assert.equal(host.mappings.size, 0);
    await rejectsWithCsiProxyError(
      smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\b" }),
      Code.NotFound,
      `error remove smb mapping '${ROOT}'. err: no SMB global mapping for remote path ${ROOT} [upstream: No MSFT_SmbGlobalMapping objects found]`,
    );
  });

  it("a retried identical call with local_path does not count twice", async () => {
    const { host, smb } = await setupSmb();
    for (let i = 0; i < 3; i++) await smb.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
    assert.deepEqual(smb.references(), { [ROOT]: 1 });
    assert.equal(host.calls.filter((c) => c.startsWith("createDirLink")).length, 1);
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\a" });
    assert.equal(host.mappings.size, 0);
  });

  it("calls without local_path count one each (no identity to recognise a retry)", async () => {
    const { smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req(ROOT));
    await smb.newSmbGlobalMapping(req(ROOT));
    assert.deepEqual(smb.references(), { [ROOT]: 2 });
  });

  it("keeps share roots apart", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req("\\\\server\\one\\x", local("a")));
    await smb.newSmbGlobalMapping(req("\\\\server\\two\\x", local("b")));
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\one\\x" });
    assert.deepEqual([...host.mappings.keys()], ["\\\\server\\two"]);
  });

  it("a use whose link the driver removed first counts as the released one", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\vol", local("a")));
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\vol", local("b")));
    host.removeLink(local("a")); // Rmdir before RemoveSmbGlobalMapping
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\vol" });
    assert.deepEqual(smb.references(), { [ROOT]: 1 }, "b is still in use");
    assert.ok(host.mappings.has(ROOT));
  });

  it("drivers that count themselves (one Remove for many volumes) do not leak the mapping", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\pvc-1", local("a")));
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\pvc-2", local("b")));
    host.removeLink(local("a")); // volume 1 unstaged: the driver's own count was 2, no Remove
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\pvc-2" });
    assert.equal(host.mappings.size, 0);
  });

  it("the sweep drops uses whose links are gone and removes a mapping left unused", async () => {
    const { host, smb } = await setupSmb();
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\v", local("a")));
    await smb.newSmbGlobalMapping(req("\\\\server\\share\\v", local("b")));
    host.removeLink(local("a"));
    await smb.sweep();
    assert.deepEqual(smb.references(), { [ROOT]: 1 });
    host.removeLink(local("b"));
    await smb.sweep();
    assert.deepEqual(smb.references(), {});
    assert.equal(host.mappings.size, 0);
  });

  it("removes a mapping nobody recorded (made before counting), as upstream", async () => {
    const { host, smb } = await setupSmb({ host: new FakeSmbHost().addMapping(ROOT) });
    await smb.removeSmbGlobalMapping({ remotePath: "\\\\server\\share\\any" });
    assert.equal(host.mappings.size, 0);
  });

  it("a failed teardown is finished by a retry", async () => {
    const { host, smb, state } = await setupSmb();
    await smb.newSmbGlobalMapping(req(ROOT, local("a")));
    host.failures.set("removeMapping", internal("busy"));
    await rejectsWithCsiProxyError(smb.removeSmbGlobalMapping({ remotePath: ROOT }), Code.Internal, "busy");
    assert.deepEqual(JSON.parse(state.text!).roots[ROOT], { users: [], removing: true });
    await smb.removeSmbGlobalMapping({ remotePath: ROOT });
    assert.equal(host.mappings.size, 0);
    assert.deepEqual(JSON.parse(state.text!).roots, {});
  });

  it("parallel calls for one root create the mapping once and count every distinct user", async () => {
    const { host, smb } = await setupSmb();
    await Promise.all(Array.from({ length: 20 }, (_, i) => smb.newSmbGlobalMapping(req(`\\\\server\\share\\v${i}`, local(`p${i}`)))));
    assert.equal(host.calls.filter((c) => c.startsWith("createMapping")).length, 1);
    assert.deepEqual(smb.references(), { [ROOT]: 20 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => smb.removeSmbGlobalMapping({ remotePath: `\\\\server\\share\\v${i}` })));
    assert.equal(host.mappings.size, 0);
    assert.deepEqual(smb.references(), {});
  });
});

describe("Windows platform", () => {
  it("identifies local paths case-insensitively", async () => {
    const host = new FakeSmbHost();
    const policy = createPathPolicy({
      platform: "win32",
      allowedDirs: ["C:\\var\\lib\\kubelet"],
      resolve: async (p) => (["C:\\", "C:\\var", "C:\\var\\lib", "C:\\var\\lib\\kubelet"].includes(p) ? p : null),
    });
    const smb = await createRefCountedSmb({ host, policy, state: memoryState(), requirePrivacy: true, platform: "win32", sweepIntervalMs: 0 });
    await smb.newSmbGlobalMapping(req(ROOT, "C:\\var\\lib\\kubelet\\a"));
    host.entries.set("C:\\VAR\\lib\\kubelet\\A", host.entries.get("C:\\var\\lib\\kubelet\\a")!);
    await smb.newSmbGlobalMapping(req(ROOT, "C:\\VAR\\lib\\kubelet\\A"));
    assert.deepEqual(smb.references(), { [ROOT]: 1 });
    await rejectsWithCsiProxyError(smb.newSmbGlobalMapping(req(ROOT, "C:\\var\\lib\\kubelet\\..\\x")), Code.InvalidArgument);
  });
});

describe("a call whose caller went away while it waited for its share root", () => {
  /** A host whose createMapping waits at `held` until the test lets it pass. */
  class HeldSmbHost extends FakeSmbHost {
    readonly held = holdPoint();
    override async createMapping(root: string, username: string, password: string, requirePrivacy: boolean) {
      await this.held.arrive();
      return super.createMapping(root, username, password, requirePrivacy);
    }
  }

  /** The service over its parts, as smb-group.ts puts them together. */
  async function make(host: FakeSmbHost, state: JsonStateFile<SmbState>, locks: KeyedMutex = createKeyedMutex()) {
    const log = { info() {}, warning() {} };
    const refs = await openSmbReferences({ state, locks, host, platform: "linux", log });
    const steps = createSmbMappingSteps({ host, refs, requirePrivacy: true, log });
    return { ...createSmbService({ host, policy: linuxPolicy(), refs, steps, platform: "linux", log }), references: () => refs.counts() };
  }

  /** Runs a second call for the root held by a first one whose createMapping is held; its deadline passes while it waits. */
  async function queuedBehind(first: SmbService, second: SmbService, host: HeldSmbHost) {
    const holding = first.newSmbGlobalMapping(req("\\\\server\\share\\a", local("a")));
    await host.held.entered;
    const waiting = second.newSmbGlobalMapping(req("\\\\server\\share\\b", local("b")), { signal: AbortSignal.timeout(100) });
    waiting.catch(() => {});
    await sleep(400); // the deadline has passed while the first call holds the root
    host.held.pass();
    await holding;
    const err = await rejectsWithCsiProxyError(waiting, Code.DeadlineExceeded, /was not started .*nothing was done/);
    const after = host.calls.filter((c) => !c.startsWith("getMapping") && !c.startsWith("isPathValid"));
    assert.deepEqual(after, [`createMapping ${ROOT} user=user privacy=true`, `createDirLink ${local("a")} -> \\\\server\\share\\a`], "the dropped call never reached the host");
    assert.equal(host.entries.has(local("b")), false);
    return err;
  }

  it("in-process locks: it leaves the queue with DeadlineExceeded and never runs", async () => {
    const host = new HeldSmbHost();
    const smb = await make(host, memoryState());
    await queuedBehind(smb, smb, host);
    assert.deepEqual(smb.references(), { [ROOT]: 1 });
  });

  it("node-wide locks, held by another process: it stops polling the lock file and never runs", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "smb-node-locks-"));
    try {
      const host = new HeldSmbHost();
      const state = memoryState();
      // Two lock sets on one directory are two processes' worth of flock(2) descriptors.
      const first = await make(host, state, createNodeLocks({ dir, platform: "linux" }));
      const second = await make(host, state, createNodeLocks({ dir, platform: "linux" }));
      const err = await queuedBehind(first, second, host);
      assert.match(err.message, /node-wide lock .* held by another csi-proxy process/);
      assert.deepEqual(first.references(), { [ROOT]: 1 });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
