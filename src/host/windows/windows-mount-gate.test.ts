/**
 * The Windows host's gate (src/host/windows/windows-mount-gate.ts, gated-win32.ts,
 * gated-windows-filesystem-host.ts): its keys without a syscall, the links it learns from the
 * policy's resolutions, and the served filesystem host's recursive deletes against a stand-in whose
 * Win32 calls under one root stop returning (test/doubles/fake-win32-handles.ts, with every call
 * under that root held until the test lets it go, as a call on a dead SMB share is). The daemon's
 * Node fs calls on a hung share under Wine: wine-dead-share.test.ts.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Code, CsiProxyError } from "../../errors.ts";
import { blockedHostOperations, createMountGate } from "../mount-gate.ts";
import { createWindowsGateKeys, createWindowsMountGate, gateLearningResolver, MAX_LEARNED_LINKS, probePath, windowsRootOf } from "./windows-mount-gate.ts";
import { gatedWindowsFilesystemHost } from "./gated-windows-filesystem-host.ts";
import { gateWalkWin32 } from "./gated-win32.ts";
import type { ReparseProbe } from "./filesystem.ts";
import { fakeWin32Handles } from "../../../test/doubles/fake-win32-handles.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const codeOf = (e: unknown) => (e as { code?: number }).code;

describe("Windows gate keys", () => {
  it("a path's key is its volume or share root, found lexically", () => {
    const cases: [string, string][] = [
      ["C:\\var\\lib\\kubelet\\pods\\x", "C:\\"],
      ["c:\\", "C:\\"],
      ["q:/a/b", "Q:\\"],
      ["\\\\?\\C:\\very\\long\\path", "C:\\"],
      ["\\??\\D:\\x", "D:\\"],
      ["\\\\Server\\Share\\dir\\file", "\\\\server\\share\\"],
      ["\\\\server\\share", "\\\\server\\share\\"],
      ["\\\\?\\UNC\\Server\\Share\\dir", "\\\\server\\share\\"],
      ["\\\\?\\Volume{4C1B02C1-D990-11DC-99AE-806E6F6E6963}\\dir", "\\\\?\\volume{4c1b02c1-d990-11dc-99ae-806e6f6e6963}\\"],
      ["/tmp/a/b", "/tmp"],
    ];
    for (const [p, key] of cases) assert.equal(windowsRootOf(p), key, p);
    assert.match(probePath("Q:\\"), /^Q:\\\.csi-proxy-probe-\d+-\d+$/);
    assert.notEqual(probePath("Q:\\"), probePath("Q:\\"), "a fresh name each time (no cache can answer it)");
  });

  it("a link on C:\\ into a share is learned from a resolution: paths under it are keyed by the share until it resolves locally again", () => {
    const keys = createWindowsGateKeys();
    const gm = "C:\\var\\lib\\kubelet\\plugins\\smb\\globalmount";
    assert.equal(keys.keyOf(`${gm}\\a`), "C:\\");
    keys.learn(`${gm}\\a\\b`, "\\\\?\\UNC\\srv\\Share\\vol1\\a\\b");
    assert.equal(keys.keyOf(`${gm}\\a\\new`), "\\\\srv\\share\\");
    assert.equal(keys.keyOf(gm.toUpperCase()), "\\\\srv\\share\\", "case-insensitive");
    assert.equal(keys.keyOf("C:\\var\\lib\\kubelet\\plugins\\smb\\other"), "C:\\", "a sibling stays on C:\\");
    keys.learn(`${gm}\\a`, `${gm}\\a`); // the link was replaced by a plain directory
    assert.equal(keys.keyOf(`${gm}\\a\\new`), "C:\\");
    assert.equal(keys.learned(), 0);
  });

  it(`at most ${MAX_LEARNED_LINKS} links are remembered (the oldest forgotten)`, () => {
    const keys = createWindowsGateKeys();
    for (let i = 0; i <= MAX_LEARNED_LINKS; i++) keys.learn(`C:\\k\\l${i}`, `\\\\srv\\s${i}\\x`);
    assert.equal(keys.learned(), MAX_LEARNED_LINKS);
    assert.equal(keys.keyOf("C:\\k\\l0\\y"), "C:\\");
    assert.equal(keys.keyOf(`C:\\k\\l${MAX_LEARNED_LINKS}\\y`), `\\\\srv\\s${MAX_LEARNED_LINKS}\\`);
  });

  it("the gated resolver runs under the input's key and teaches the keys", async () => {
    const keys = createWindowsGateKeys();
    const seen: string[] = [];
    const gate = createMountGate({ mountOf: async (p) => (seen.push(keys.keyOf(p)), keys.keyOf(p)), probe: async () => undefined });
    const resolve = gateLearningResolver(async (p) => (p.startsWith("C:\\k\\link") ? p.replace("C:\\k\\link", "\\\\srv\\share") : p), gate, keys);
    await resolve("C:\\k\\link\\x");
    await resolve("C:\\k\\link\\y");
    assert.deepEqual(seen, ["C:\\", "\\\\srv\\share\\"]);
  });
});

describe("the Windows gate", () => {
  it("counts a blocked call under its root for the metric, probes the root with a fresh name, answers again when the probe does", async () => {
    const probed: string[] = [];
    let answerProbe!: () => void;
    const gate = createWindowsMountGate(createWindowsGateKeys(), (p) => (probed.push(p), new Promise<void>((r) => (answerProbe = r))), { notRespondingAfterMs: 100 });
    let release!: () => void;
    const held = gate.run("q:\\dir\\x", () => new Promise<void>((r) => (release = r)));
    await sleep(250);
    assert.equal(blockedHostOperations().get("Q:\\"), 1, "the metric's series for Q:\\");
    const err = await gate.run("Q:\\other", async () => 1).then(() => undefined, (e: CsiProxyError) => e);
    assert.equal(err?.code, Code.Unavailable);
    assert.match(err!.message, /the filesystem mounted at Q:\\ is not responding/);
    assert.equal(probed.length, 1);
    assert.match(probed[0], /^Q:\\\.csi-proxy-probe-\d+-\d+$/);
    answerProbe();
    await sleep(10);
    assert.equal(await gate.run("Q:\\other", async () => 2), 2, "answering again once the probe returns");
    release();
    await held;
    assert.equal(blockedHostOperations().get("Q:\\"), undefined);
  });
});

describe("the walk's gated Win32 calls", () => {
  it("a call on a handle runs under the key of the path the handle was opened with; closing is never refused", async () => {
    const keys: string[] = [];
    let refuse = false;
    const gate = {
      run: async <T>(p: string, op: () => Promise<T>) => {
        keys.push(windowsRootOf(p));
        if (refuse) throw new CsiProxyError(Code.Unavailable, `${windowsRootOf(p)} is not responding`);
        return op();
      },
      runKey: async <T>(_key: string, op: () => Promise<T>) => op(),
      stalledMs: () => 0,
      blocked: () => new Map(),
      notResponding: () => new Map(),
      running: () => 0,
    };
    const closed: unknown[] = [];
    const win32 = gateWalkWin32(
      {
        getFileAttributes: () => 0x10,
        reparseTag: () => null,
        openEntryNoFollow: () => 7,
        fileInfo: () => ({ id: "1:2:3", attributes: 0x10 }),
        openListing: () => 8,
        readDirectoryBatch: () => null,
        deleteByHandle: () => undefined,
        closeHandle: (h) => void closed.push(h),
      },
      gate,
    );
    const h = (await win32.openEntryNoFollow("\\\\?\\UNC\\srv\\share\\d", true))!;
    await win32.fileInfo(h, "named-for-messages-only");
    const lh = await win32.openListing(h, "named-for-messages-only");
    await win32.readDirectoryBatch(lh, true, "named-for-messages-only");
    assert.deepEqual(keys, Array(4).fill("\\\\srv\\share\\"));
    refuse = true;
    await assert.rejects(Promise.resolve(win32.deleteByHandle(h, "x")), (e: CsiProxyError) => e.code === Code.Unavailable);
    await win32.closeHandle(lh);
    await win32.closeHandle(h);
    assert.deepEqual(closed, [8, 7], "both closed while the share is refused");
  });
});

describe("the served Windows filesystem host's recursive deletes on a share that stops answering", () => {
  it("hold at most the gate's per-root slots, fail Unavailable once it is not responding, leave other roots alone, recover when it answers", async (t) => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), "wingate-"));
    t.after(() => fs.rmSync(base, { recursive: true, force: true }));
    const dead = path.join(base, "share");
    const live = path.join(base, "local");
    for (let i = 0; i < 30; i++) {
      fs.mkdirSync(path.join(dead, `t${i}`, "d"), { recursive: true });
      fs.mkdirSync(path.join(live, `t${i}`, "d"), { recursive: true });
      fs.writeFileSync(path.join(live, `t${i}`, "d", "f"), "x");
    }
    // The stand-in: while `hung`, every call naming a path under `dead` waits (a dead share's lookup).
    const fake = fakeWin32Handles();
    let hung = false;
    let release!: () => void;
    let released = new Promise<void>((r) => (release = r));
    let inFlight = 0;
    let maxInFlight = 0;
    const handlePaths = new Map<unknown, string>();
    const under = (p: string | undefined) => p !== undefined && (p === dead || p.startsWith(dead + path.sep));
    const held = async <T>(p: string | undefined, op: () => T | Promise<T>): Promise<T> => {
      if (hung && under(p)) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await released;
        inFlight--;
      }
      return op();
    };
    const standIn: ReparseProbe = {
      getFileAttributes: (p) => held(p, () => fake.getFileAttributes(p)),
      reparseTag: (p) => held(p, () => fake.reparseTag(p)),
      openEntryNoFollow: (p, d) => held(p, () => {
        const h = fake.openEntryNoFollow(p, d);
        if (h !== null) handlePaths.set(h, p);
        return h;
      }),
      fileInfo: (h, p) => held(handlePaths.get(h) ?? p, () => fake.fileInfo(h, p)),
      openListing: (h, p) => held(handlePaths.get(h) ?? p, () => {
        const lh = fake.openListing(h, p);
        handlePaths.set(lh, handlePaths.get(h) ?? p);
        return lh;
      }),
      readDirectoryBatch: (h, r, p) => held(handlePaths.get(h) ?? p, () => fake.readDirectoryBatch(h, r, p)),
      deleteByHandle: (h, p) => held(handlePaths.get(h) ?? p, () => fake.deleteByHandle(h, p)),
      closeHandle: (h) => fake.closeHandle(h),
    };
    const thresholdMs = 1500;
    const gate = createMountGate({
      mountOf: async (p) => (under(p) ? dead : "/"),
      probe: (m) => held(m, () => fs.promises.statfs(m)),
      perMount: 3,
      total: 48,
      notRespondingAfterMs: thresholdMs,
    });
    const host = gatedWindowsFilesystemHost(standIn, gate);

    hung = true;
    const codes: number[] = [];
    const calls = Array.from({ length: 30 }, (_, i) =>
      host.removeAll(path.join(dead, `t${i}`)).then(
        () => void codes.push(0),
        (e: unknown) => void codes.push(codeOf(e) ?? -1),
      ),
    );
    for (const t1 = Date.now(); inFlight < 3 && Date.now() - t1 < 5000; ) await sleep(10);
    await sleep(50);
    assert.equal(inFlight, 3, "three calls under the share are held, the rest wait in the gate");
    // Another root's deletes go on meanwhile.
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) await host.removeAll(path.join(live, `t${i}`));
    assert.ok(performance.now() - t0 < thresholdMs, "deletes on another root neither wait for a slot nor fail");
    assert.equal(fs.existsSync(path.join(live, "t0")), false);
    // Once the watchdog has marked the share, the waiting calls fail Unavailable, later ones at once.
    for (const t1 = Date.now(); codes.length < 27 && Date.now() - t1 < 5000; ) await sleep(20);
    assert.equal(codes.filter((c) => c === Code.Unavailable).length, 27, `waiting calls fail Unavailable (codes ${codes.join(",")})`);
    assert.equal(gate.blocked().get(dead), 3, "counted as blocked under the share");
    const t2 = performance.now();
    const later = await host.removeAll(path.join(dead, "t29")).then(() => undefined, (e: CsiProxyError) => e);
    assert.equal(later?.code, Code.Unavailable);
    assert.match(later!.message, /is not responding: it has not answered for \d+\.\d s/);
    assert.ok(performance.now() - t2 < thresholdMs * 0.66, "a later call fails at once, without waiting for a slot");
    await host.removeAll(path.join(live, "t10"));
    assert.equal(maxInFlight, 3, "never more than three held under the share");

    // The share answers again: the held calls finish and new ones succeed within a second.
    hung = false;
    release();
    released = Promise.resolve();
    await Promise.all(calls);
    assert.equal(codes.filter((c) => c === 0).length, 3, "the held calls complete once the share answers");
    const t3 = Date.now();
    await host.removeAll(path.join(dead, "t29"));
    assert.ok(Date.now() - t3 < 1000);
    assert.equal(fs.existsSync(path.join(dead, "t29")), false);
    assert.equal(fake.open.size, 0, "every handle closed");
  });
});
