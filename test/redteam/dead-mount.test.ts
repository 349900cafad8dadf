// Dead mounts under the kubelet dir (FUSE daemons stopped with SIGSTOP, standing in for dead NFS/SMB
// servers) with thousands of calls on them: every other call, on every endpoint, keeps answering as
// fast as it did before (p99 against a same-run baseline with a floor), memory stays bounded, the
// calls on the dead mount fail Unavailable naming it once it is not responding, and everything is normal
// within 1 s of the mount answering again.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { startStoppableFuse, fuseSkipReason, type StoppableFuse } from "../helpers/stoppable-fuse.ts";
import { connectGroup } from "../../src/client/connect-group.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1];
const codeOf = (e: unknown) => (e as { code?: number }).code;

describe("dead mounts under the kubelet dir", { skip: fuseSkipReason() }, () => {
  let daemon: DaemonProcess;
  const fuses: StoppableFuse[] = [];
  // 20 connections: 500 hung calls each, half the transport's concurrent-stream limit per connection.
  const hungConns: { client: any; close(): void }[] = [];
  let fs1: { client: any; close(): void };
  let fsBeta: { client: any; close(): void };
  let volume: { client: any; close(): void };
  let system: { client: any; close(): void };
  let seq = 0;
  let baseline: { p99: number; rss: number };

  /** Mkdir, PathExists of a new path (v1beta1), a volume call and a system call, `rounds` times each, in turn: latencies in ms. */
  async function otherCalls(rounds: number): Promise<number[]> {
    const lat: number[] = [];
    const time = async (p: Promise<unknown>) => {
      const t0 = performance.now();
      await p.catch((e: unknown) => {
        // Only the answer's speed matters for the volume/system calls (no such volume; DMI may be absent) — never a hang or Unavailable.
        if (codeOf(e) === Code.Unavailable || codeOf(e) === Code.DeadlineExceeded) throw e;
      });
      lat.push(performance.now() - t0);
    };
    for (let i = 0; i < rounds; i++) {
      const n = `n${seq++}`;
      await time(fs1.client.mkdir({ path: path.join(daemon.kubeletDir, "pods", n) }));
      await time(fsBeta.client.pathExists({ path: path.join(daemon.kubeletDir, "pods", `${n}-absent`) }));
      await time(volume.client.getVolumeStats({ volumeId: "no-such-volume" }));
      await time(system.client.getBIOSSerialNumber({}));
    }
    return lat;
  }

  /**
   * `n` PathExists calls under `dir`, spread over the hung connections. `codes` fills in as they
   * settle (0 = answered, else the gRPC code); `all` settles when every one has.
   */
  function hang(dir: string, n: number, offset = 0) {
    const codes: number[] = [];
    const calls: Promise<void>[] = [];
    // Issued in batches, yielding between them: the client's own event loop must keep answering its
    // connections' pings while it encodes thousands of calls.
    const issued = (async () => {
      for (let i = 0; i < n; i++) {
        const c = hungConns[(offset + i) % hungConns.length];
        calls.push(
          c.client.pathExists({ path: path.join(dir, `h${i}`) }).then(
            () => void codes.push(0),
            (e: unknown) => void codes.push(codeOf(e) ?? -1),
          ),
        );
        if (i % 100 === 99) await sleep(1);
      }
    })();
    return { codes, issued, all: issued.then(() => Promise.all(calls)) };
  }

  /** Waits until at least `n` of `codes` are in (at most `ms`). */
  async function settled(codes: () => number[], n: number, ms: number) {
    for (const t0 = Date.now(); codes().length < n && Date.now() - t0 < ms; ) await sleep(50);
  }

  before(async () => {
    daemon = await startDaemonProcess();
    mkdirSync(path.join(daemon.kubeletDir, "pods"), { recursive: true });
    // A stalled call fails the measurement (DeadlineExceeded) instead of hanging the test.
    const timeoutMs = 15_000;
    fs1 = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1"], timeoutMs });
    fsBeta = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1beta1"], timeoutMs });
    volume = await connectGroup("volume", { socketDir: daemon.socketDir, versions: ["v1"], timeoutMs });
    system = await connectGroup("system", { socketDir: daemon.socketDir, versions: ["v1alpha1"], timeoutMs });
    for (let i = 0; i < 20; i++) hungConns.push(await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1"] }));
    await otherCalls(10); // warm-up
    const lat = await otherCalls(50);
    baseline = { p99: p99(lat), rss: rssMb(daemon.child.pid!) };
  });
  after(async () => {
    for (const f of fuses) f.remove();
    for (const c of [fs1, fsBeta, volume, system, ...hungConns]) c?.close();
    if (daemon && daemon.child.exitCode === null && daemon.child.signalCode === null) await daemon.stop();
  });

  /** The bound on the other calls' p99: 100 ms, or (loaded machine) 3× the same-run baseline + 50 ms. */
  const latencyBound = () => Math.max(100, baseline.p99 * 3 + 50);

  /**
   * The other calls' latencies while the mounts hang: a second sample is taken when the first breaches
   * the bound (this shared 2-core machine stalls a process for 100 ms now and then with no hang at
   * all), so only a breach seen twice fails.
   */
  async function otherCallsTwice(rounds: number): Promise<number[]> {
    const first = await otherCalls(rounds);
    return p99(first) <= latencyBound() ? first : otherCalls(rounds);
  }

  /** p99 of the other calls within {@link latencyBound}; RSS growth at most 80 MB (aim: 64). */
  function assertUnaffected(what: string, lat: number[], rss: number, rssBefore: number) {
    const bound = latencyBound();
    const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0];
    console.log(`# ${what}: other calls p99 ${p99(lat).toFixed(1)} ms (baseline ${baseline.p99.toFixed(1)} ms, bound ${bound.toFixed(0)} ms), RSS ${rss.toFixed(0)} MB (before the hang ${rssBefore.toFixed(0)} MB), load ${load}`);
    assert.ok(p99(lat) <= bound, `${what}: p99 ${p99(lat).toFixed(1)} ms > ${bound.toFixed(0)} ms`);
    // the aim is +64 MB; 10 000 hung calls measured +46 to +62 MB, so the test allows 80 (docs/reliability.md "Dead mounts")
    assert.ok(rss - rssBefore <= 80, `${what}: RSS +${(rss - rssBefore).toFixed(0)} MB`);
  }

  it("10 000 calls on one dead mount: every other call answers as before; they fail Unavailable naming the mount; normal within 1 s of it answering", async () => {
    const fuse = await startStoppableFuse(path.join(daemon.kubeletDir, "pods", "dead"));
    fuses.push(fuse);
    await sleep(100);
    const rssBefore = rssMb(daemon.child.pid!);
    fuse.stop();
    const held = hang(fuse.mountpoint, 10_000);
    await held.issued;
    // All but the few running under the mount (the gate's per-mount bound) fail Unavailable, once the
    // watchdog has marked it or at once when its queue is full.
    await settled(() => held.codes, 10_000 - 3, 60_000);
    const unavailable = held.codes.filter((c) => c === Code.Unavailable).length;
    assert.ok(unavailable >= 10_000 - 3, `the held calls fail Unavailable (${unavailable} of ${held.codes.length} settled; codes ${[...new Set(held.codes)].join(", ")})`);
    // The mount is still dead, its blocked calls hold their threads, new calls keep arriving on it:
    // the other calls answer as before.
    const trickle = hang(fuse.mountpoint, 200);
    const lat = await otherCallsTwice(40);
    const rss = rssMb(daemon.child.pid!);
    await trickle.all;
    assert.ok(trickle.codes.every((c) => c === Code.Unavailable), "calls under the dead mount fail Unavailable meanwhile");
    assertUnaffected("10 000 calls on one dead mount", lat, rss, rssBefore);
    // A later call under it fails at once, naming the mount and how long it has not answered.
    const t1 = performance.now();
    const err = await fs1.client.pathExists({ path: path.join(fuse.mountpoint, "later") }).then(() => undefined, (e: CsiProxyError) => e);
    assert.equal(err?.code, Code.Unavailable);
    assert.match(err!.message, new RegExp(`${fuse.mountpoint.replace(/[/.]/g, "\\$&")} is not responding: it has not answered for \\d+\\.\\d s`));
    assert.ok(performance.now() - t1 < 1000, "failed at once");
    assert.equal(held.codes.length, 10_000 - 3, "the operations running under the dead mount wait for it");

    fuse.resume();
    const t2 = Date.now();
    for (;;) {
      const r = await fs1.client.pathExists({ path: path.join(fuse.mountpoint, "after") }).then((a: { exists: boolean }) => a, () => undefined);
      if (r) {
        assert.equal(r.exists, false);
        break;
      }
      assert.ok(Date.now() - t2 < 1000, "normal within 1 s of the mount answering again");
      await sleep(20);
    }
    await held.all;
    assert.equal(held.codes.filter((c) => c === 0).length, 3, "the calls that were running answer once it does");
    await fs1.client.mkdir({ path: path.join(fuse.mountpoint, "made") });
    assert.equal((await fs1.client.pathExists({ path: path.join(fuse.mountpoint, "made") })).exists, true);
  });

  it("20 dead mounts × 500 calls each: every other call answers as before", async () => {
    const dead = await Promise.all(Array.from({ length: 20 }, (_, i) => startStoppableFuse(path.join(daemon.kubeletDir, "pods", `dead-${i}`))));
    fuses.push(...dead);
    await sleep(100);
    const rssBefore = rssMb(daemon.child.pid!);
    for (const f of dead) f.stop();
    const parts = dead.map((f, i) => hang(f.mountpoint, 500, i));
    const codes = () => parts.flatMap((p) => p.codes);
    await Promise.all(parts.map((p) => p.issued));
    await settled(codes, 10_000 - 20 * 3, 60_000);
    assert.ok(codes().filter((c) => c === Code.Unavailable).length >= 10_000 - 20 * 3, `the held calls fail Unavailable (${codes().length} settled)`);
    const trickle = dead.map((f, i) => hang(f.mountpoint, 10, i));
    const lat = await otherCallsTwice(40);
    const rss = rssMb(daemon.child.pid!);
    await Promise.all(trickle.map((t) => t.all));
    assertUnaffected("20 dead mounts × 500 calls", lat, rss, rssBefore);
    for (const f of dead) f.resume();
    await Promise.all(parts.map((p) => p.all));
    await sleep(200);
    for (const f of dead) assert.equal((await fs1.client.pathExists({ path: path.join(f.mountpoint, "x") })).exists, false);
  });

  it("SIGTERM stops the daemon within 5 s while calls hang on a dead mount", async () => {
    const fuse = fuses[0];
    fuse.stop();
    const held = hang(fuse.mountpoint, 200);
    await held.issued;
    await sleep(500);
    const t0 = Date.now();
    daemon.child.kill("SIGTERM");
    // bounded: a daemon that does not exit is killed after 15 s and the test fails on the time
    const killer = setTimeout(() => daemon.child.kill("SIGKILL"), 15_000);
    const code = await daemon.exited;
    clearTimeout(killer);
    const took = Date.now() - t0;
    console.log(`# SIGTERM with calls hung on a dead mount: exited in ${took} ms, code ${String(code)}`);
    assert.ok(took < 5000, `exited in ${took} ms`);
    assert.match(daemon.stderr(), /host operation\(s\) still in the kernel; exiting without waiting for them|Stopped/);
    fuse.resume();
  });
});
