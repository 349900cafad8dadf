import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Code, CsiProxyError } from "../errors.ts";
import { createMountGate, mountPointOf, registerMountGate, blockedHostOperations } from "./mount-gate.ts";

/** An operation that settles when the test says so (a syscall blocked in a filesystem). */
function hanging() {
  let release!: () => void;
  const p = new Promise<string>((r) => (release = () => r("done")));
  return { op: () => p, release };
}

const mountOf = async (p: string) => mountPointOf(["/", "/k", "/k/dead", "/k/dead2"], p);
const unavailable = (re: RegExp) => (e: unknown) => e instanceof CsiProxyError && e.code === Code.Unavailable && re.test(e.message);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("mountPointOf", () => {
  it("takes the longest mount point on a directory boundary", () => {
    assert.equal(mountPointOf(["/", "/k", "/k/dead"], "/k/dead/x"), "/k/dead");
    assert.equal(mountPointOf(["/", "/k", "/k/dead"], "/k/dead"), "/k/dead");
    assert.equal(mountPointOf(["/", "/k", "/k/dead"], "/k/deadline/x"), "/k");
    assert.equal(mountPointOf(["/k"], "/other"), "/");
  });
});

describe("MountGate", () => {
  it("runs at most perMount operations under a mount; the others wait; other mounts go on", async () => {
    let probes = 0;
    const gate = createMountGate({ mountOf, probe: async () => void probes++, perMount: 2, total: 10, notRespondingAfterMs: 60_000 });
    const h = hanging();
    let started = 0;
    const calls = Array.from({ length: 5 }, () => gate.run("/k/dead/a", () => (started++, h.op())));
    await sleep(10);
    assert.equal(started, 2, "two running, three waiting");
    assert.equal(await gate.run("/k/ok", async () => "other"), "other");
    h.release();
    assert.deepEqual(await Promise.all(calls), ["done", "done", "done", "done", "done"]);
    assert.equal(started, 5);
  });

  it("keeps a reserve: at most `total` in all, so dead mounts never take every slot", async () => {
    const gate = createMountGate({ mountOf, probe: async () => {}, perMount: 2, total: 3, notRespondingAfterMs: 60_000 });
    const h = hanging();
    let started = 0;
    const a = [gate.run("/k/dead/a", () => (started++, h.op())), gate.run("/k/dead/b", () => (started++, h.op())), gate.run("/k/dead2/a", () => (started++, h.op())), gate.run("/k/dead2/b", () => (started++, h.op()))];
    await sleep(10);
    assert.equal(started, 3);
    h.release();
    await Promise.all(a);
  });

  it("marks a mount not responding after the threshold; calls under it then fail at once; it answers again when an operation returns", async () => {
    let probes = 0;
    const gate = createMountGate({ mountOf, probe: () => (probes++, new Promise(() => {})), perMount: 2, total: 10, notRespondingAfterMs: 100 });
    const h = hanging();
    const running = [gate.run("/k/dead/a", h.op), gate.run("/k/dead/b", h.op)];
    const waiting = gate.run("/k/dead/c", h.op);
    await assert.rejects(waiting, unavailable(/\/k\/dead is not responding: it has not answered for 0\.1 s/));
    assert.deepEqual([...gate.blocked()], [["/k/dead", 2]]);
    assert.ok(gate.notResponding().has("/k/dead"));
    const t0 = Date.now();
    await assert.rejects(gate.run("/k/dead/d", async () => assert.fail("must not run")), unavailable(/\/k\/dead is not responding/));
    assert.ok(Date.now() - t0 < 50, "failed at once");
    assert.equal(probes, 0, "no free slot for a probe: the blocked operations are the probe");
    assert.equal(await gate.run("/k/other", async () => "ok"), "ok", "another mount is not affected");
    h.release();
    assert.deepEqual(await Promise.all(running), ["done", "done"]);
    assert.equal(gate.notResponding().size, 0);
    assert.equal(await gate.run("/k/dead/e", async () => "again"), "again");
  });

  it("probes a not-responding mount in a free slot, one probe at a time; its answer clears the mark", async () => {
    let probes = 0;
    let answerProbe!: () => void;
    const gate = createMountGate({ mountOf, probe: () => (probes++, new Promise<void>((r) => (answerProbe = r))), perMount: 3, total: 10, notRespondingAfterMs: 50 });
    const h = hanging();
    void gate.run("/k/dead/a", h.op);
    await sleep(120);
    await assert.rejects(gate.run("/k/dead/b", h.op), unavailable(/not responding/));
    await assert.rejects(gate.run("/k/dead/c", h.op), unavailable(/not responding/));
    assert.equal(probes, 1, "one probe at a time");
    answerProbe();
    await sleep(5);
    assert.equal(await gate.run("/k/dead/d", async () => "answered"), "answered");
    h.release();
  });

  it("a call waiting for a slot held under other mounts fails after the threshold, naming them; its own mount is not marked", async () => {
    const gate = createMountGate({ mountOf, probe: () => new Promise(() => {}), perMount: 2, total: 1, notRespondingAfterMs: 100 });
    const h = hanging();
    void gate.run("/k/dead/a", h.op);
    await sleep(20);
    await assert.rejects(gate.run("/k/b", async () => "x"), unavailable(/no host operation could start under \/k for 0\.1 s: all 1 threads .* held under other mounts \(\/k\/dead\)/));
    assert.deepEqual([...gate.notResponding().keys()], ["/k/dead"]);
    h.release();
    await sleep(5);
    assert.equal(await gate.run("/k/b", async () => "x"), "x");
  });

  it("a waiting call ends with its signal; more waiters than the bound fail at once", async () => {
    const gate = createMountGate({ mountOf, probe: async () => {}, perMount: 1, total: 10, notRespondingAfterMs: 60_000, maxWaitingPerMount: 1 });
    const h = hanging();
    void gate.run("/k/dead/a", h.op);
    const ac = new AbortController();
    const w = gate.run("/k/dead/b", h.op, ac.signal);
    await assert.rejects(gate.run("/k/dead/c", h.op), unavailable(/1 calls are already waiting/));
    ac.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline"));
    await assert.rejects(w, (e: unknown) => e instanceof CsiProxyError && e.code === Code.DeadlineExceeded);
    h.release();
  });

  it("blockedHostOperations sums the registered gates", async () => {
    const gate = registerMountGate(createMountGate({ mountOf, probe: () => new Promise(() => {}), perMount: 2, total: 10, notRespondingAfterMs: 30 }));
    const h = hanging();
    const p = gate.run("/k/dead2/a", h.op);
    await sleep(60);
    assert.equal(blockedHostOperations().get("/k/dead2"), 1);
    h.release();
    await p;
    assert.equal(blockedHostOperations().get("/k/dead2"), undefined);
  });
});
