// A symbolic link on the root filesystem (in the kubelet dir of a test root on /) into a FUSE mount
// whose daemon is stopped (SIGSTOP: every lookup it must answer hangs — a dead NFS/SMB server; the
// SMB shape is exactly this, a link in the kubelet dir into the share's mount). Calls through the
// link count against the FUSE mount, never against /: with 6 of them hung (twice the gate's 3 slots
// per mount) for longer than the watchdog's 5 s, Mkdir (v1) and PathExists (v1beta1) of new paths
// under the kubelet dir all answer, their p99 within 2× the p99 of the same calls measured before
// the fault in the same run (a second sample when the first breaches: this shared machine stalls a
// process for 100 ms now and then), or 20 ms when that is more; the calls through the link beyond
// the FUSE mount's slots fail Unavailable naming the FUSE mount, and a later one at once. Then the
// FUSE server is killed (its mount answers ENOTCONN): calls through the link answer Unavailable, never Internal.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import * as path from "node:path";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { startStoppableFuse, fuseSkipReason, type StoppableFuse } from "../helpers/stoppable-fuse.ts";
import { connectGroup } from "../../src/client/connect-group.ts";
import { Code } from "../../src/errors.ts";

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1];
const codeOf = (e: unknown) => (e as { code?: number }).code;
const escape = (s: string) => s.replace(/[/.]/g, "\\$&");

describe("a link on / into a dead mount stalls only calls through it", { skip: fuseSkipReason() }, () => {
  let daemon: DaemonProcess;
  let fuse: StoppableFuse | undefined;
  let fs1: { client: any; close(): void };
  let fsBeta: { client: any; close(): void };
  let hungConn: { client: any; close(): void };
  let seq = 0;
  let link = "";

  /** Mkdir and PathExists (v1beta1) of new paths under the kubelet dir, `rounds` times each: latencies (ms) and failures. */
  async function healthyCalls(rounds: number): Promise<{ lat: number[]; failed: string[] }> {
    const lat: number[] = [];
    const failed: string[] = [];
    const time = async (p: Promise<unknown>) => {
      const t0 = performance.now();
      await p.catch((e: unknown) => failed.push(String(e)));
      lat.push(performance.now() - t0);
    };
    for (let i = 0; i < rounds; i++) {
      const n = `n${seq++}`;
      await time(fs1.client.mkdir({ path: path.join(daemon.kubeletDir, "pods", n) }));
      await time(fsBeta.client.pathExists({ path: path.join(daemon.kubeletDir, "pods", `${n}-absent`) }));
    }
    return { lat, failed };
  }

  before(async () => {
    daemon = await startDaemonProcess();
    mkdirSync(path.join(daemon.kubeletDir, "pods"), { recursive: true });
    fuse = await startStoppableFuse(path.join(daemon.root, "dead-share"));
    link = path.join(daemon.kubeletDir, "pods", "staged");
    symlinkSync(fuse.mountpoint, link);
    const timeoutMs = 15_000;
    fs1 = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1"], timeoutMs });
    fsBeta = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1beta1"], timeoutMs });
    hungConn = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1"] });
  });
  after(async () => {
    fuse?.remove();
    for (const c of [fs1, fsBeta, hungConn]) c?.close();
    if (daemon && daemon.child.exitCode === null && daemon.child.signalCode === null) await daemon.stop();
  });

  it("6 calls hung through the link: Mkdir/PathExists under the kubelet dir answer as before; the FUSE mount, never /, is not responding", async () => {
    await healthyCalls(10); // warm-up
    const control = await healthyCalls(40);
    assert.deepEqual(control.failed, []);
    const bound = Math.max(20, 2 * p99(control.lat));

    fuse!.stop();
    const t0 = Date.now();
    const codes: number[] = [];
    const messages: string[] = [];
    const hung = Array.from({ length: 6 }, (_, i) =>
      hungConn.client.pathExists({ path: path.join(link, `h${i}`) }).then(
        () => void codes.push(0),
        (e: unknown) => {
          codes.push(codeOf(e) ?? -1);
          messages.push(String(e));
        },
      ),
    );
    // Healthy calls for 7 s: across the watchdog's 5 s, while the hung calls hold their threads.
    const lat: number[] = [];
    const failed: string[] = [];
    while (Date.now() - t0 < 7_000) {
      const r = await healthyCalls(5);
      lat.push(...r.lat);
      failed.push(...r.failed);
    }
    assert.deepEqual(failed, [], "no healthy call fails while calls hang through the link");
    let faulted = p99(lat);
    if (faulted > bound) faulted = p99((await healthyCalls(40)).lat);
    console.log(`# healthy calls p99: ${p99(control.lat).toFixed(1)} ms without the fault, ${faulted.toFixed(1)} ms with 6 calls hung through the link (bound ${bound.toFixed(1)} ms, ${lat.length} calls)`);
    assert.ok(faulted <= bound, `healthy p99 ${faulted.toFixed(1)} ms > ${bound.toFixed(1)} ms`);

    // The calls beyond the FUSE mount's 3 slots have failed, naming the FUSE mount; a later call through the link fails at once.
    assert.equal(codes.length, 3, `3 hung calls answered: ${messages.join(" | ")}`);
    assert.ok(codes.every((c) => c === Code.Unavailable), messages.join(" | "));
    for (const m of messages) assert.match(m, new RegExp(escape(fuse!.mountpoint)), "names the FUSE mount");
    const t1 = performance.now();
    const later = await fs1.client.pathExists({ path: path.join(link, "later") }).then(() => null, (e: unknown) => e);
    assert.equal(codeOf(later), Code.Unavailable, String(later));
    assert.match(String(later), new RegExp(`${escape(fuse!.mountpoint)} is not responding`));
    assert.ok(performance.now() - t1 < 1000, "at once");

    fuse!.resume();
    await Promise.all(hung);
    // They answer once it does (the path policy's answer for a link out of the kubelet dir: not Unavailable).
    assert.equal(codes.length, 6);
    assert.ok(codes.slice(3).every((c) => c !== Code.Unavailable), `the calls that were running answer once it does: ${codes.join(", ")} ${messages.slice(3).join(" | ")}`);
  });

  it("a FUSE server killed (its mount answers ENOTCONN): calls on it answer Unavailable, never Internal", async () => {
    const killed = await startStoppableFuse(path.join(daemon.kubeletDir, "pods", "killed"));
    try {
      mkdirSync(path.join(killed.source, "d"));
      const pid = readdirSync("/proc").find((e) => {
        try {
          return /^\d+$/.test(e) && readFileSync(`/proc/${e}/comm`, "utf8").trim() === "bindfs" && readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0").includes(killed.mountpoint);
        } catch {
          return false;
        }
      });
      assert.ok(pid, "the bindfs process");
      process.kill(Number(pid), "SIGKILL");
      for (const t0 = Date.now(); existsSync(`/proc/${pid}`) && Date.now() - t0 < 5_000; ) await new Promise((r) => setTimeout(r, 20));
      for (const p of [path.join(killed.mountpoint, "d", "x"), path.join(killed.mountpoint, "new")]) {
        const answers = await Promise.all([fs1.client.pathExists({ path: p }), fs1.client.mkdir({ path: p }), fsBeta.client.pathExists({ path: p })].map((c: Promise<unknown>) => c.then(() => null, (e: unknown) => e)));
        for (const a of answers) assert.equal(codeOf(a), Code.Unavailable, `${p}: ${String(a)}`);
      }
    } finally {
      killed.remove();
    }
  });
});
