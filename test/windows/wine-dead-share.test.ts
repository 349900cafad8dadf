/**
 * Under Wine, the exe: a drive whose file system stops answering (Q:, mapped by the prefix's
 * dosdevices to a FUSE mount whose daemon the test stops with SIGSTOP, standing in for a dead SMB
 * server behind a mapped drive) cannot stall the rest. With 200 PathExists / IsSymlink / Rmdir calls
 * held under Q:\, the other calls (Mkdir and PathExists under the kubelet dir on C:\, a volume call
 * through the Win32 limiter, a System call) keep answering; the held calls fail Unavailable once the
 * gate has marked Q:\ not responding, a later call at once; within about a second of the daemon
 * answering again, calls under Q:\ succeed.
 *
 * Two things of Wine's own shape the setup (Windows has neither):
 * - Wine's ntdll stats every dosdevices drive's root once a second while holding the lock its file
 *   lookups share (get_drives_info), so a drive whose root does not answer stalls every file call of
 *   the prefix. The FUSE mount caches its attributes for an hour (attr_timeout/entry_timeout): the
 *   root and names looked up before the stop answer from the kernel's cache; fresh names (every held
 *   call's) still wait for the stopped daemon.
 * - A drive Wine does not know as a network drive is reported DRIVE_FIXED, and the daemon's fast
 *   lookup (local-lookup.ts) would ask it on the JS thread: Q: is registered as "network"
 *   (HKLM\Software\Wine\Drives), as a mapped SMB drive is DRIVE_REMOTE on Windows.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runWine, startWine, winPath, wineSuite, killWineServer, type Background } from "./wine-harness.ts";
import { fuseSkipReason, startStoppableFuse, type StoppableFuse } from "../helpers/stoppable-fuse.ts";

const HUNG = 200; // above libuv's pool (128 in the exe): without the gate every pool thread is held
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1];
const load = () => fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0];

let server: Background | undefined;
let fuse: StoppableFuse | undefined;
let drive: string | undefined;
const fuseSkip = fuseSkipReason();
const { w, skip } = await wineSuite("dead-share", {
  async before(w) {
    if (fuseSkip) return;
    fuse = await startStoppableFuse(path.join(os.tmpdir(), `csi-wine-share-${process.pid}`), ["attr_timeout=3600", "entry_timeout=3600"]);
    // A stopped FUSE daemon left behind would hang every later lookup under its mount: resumed and
    // unmounted however this process ends (after() does it on the normal path).
    const cleanUp = () => fuse?.remove();
    process.once("exit", cleanUp);
    for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => (cleanUp(), process.exit(1)));
    drive = path.join(w.prefix, "dosdevices", "q:");
    fs.rmSync(drive, { force: true });
    fs.symlinkSync(fuse.mountpoint, drive);
    const reg = await runWine(w, ["reg", "add", "HKLM\\Software\\Wine\\Drives", "/v", "q:", "/d", "network", "/f"]);
    assert.equal(reg.code, 0, reg.stdout);
    killWineServer(w); // the mount manager reads the drive types when it starts
    server = startWine(w, [w.exeWin, `-kubelet-path=${w.work.win}\\kubelet`, "-working-dir=Q:\\"]);
    await server.waitFor(/Serving 23 endpoints/, 90_000);
  },
  async after(w) {
    try {
      fuse?.resume();
      await server?.kill();
    } finally {
      fuse?.remove();
      if (drive) fs.rmSync(drive, { force: true });
      killWineServer(w);
      if (fuse) await runWine(w, ["reg", "delete", "HKLM\\Software\\Wine\\Drives", "/v", "q:", "/f"]);
    }
  },
});

test("200 calls held on a drive that stopped answering: other calls answer, the held ones fail Unavailable naming it, normal within ~1 s of it answering", { skip: skip || fuseSkip, timeout: 180_000 }, async () => {
  fs.mkdirSync(path.join(w.work.linux, "kubelet", "pods"), { recursive: true });
  const stopped = path.join(w.work.linux, "dead-share-stopped");
  const resumed = path.join(w.work.linux, "dead-share-resumed");
  fs.rmSync(stopped, { force: true });
  fs.rmSync(resumed, { force: true });
  const argsFile = path.join(w.work.linux, "args-dead-share.json");
  fs.writeFileSync(argsFile, JSON.stringify({ kubelet: `${w.work.win}\\kubelet`, share: "Q:\\", hung: HUNG, stopped: winPath(stopped, w.driveC), resumed: winPath(resumed, w.driveC) }));
  const client = startWine(w, [w.nodeWin, w.clientWin, "deadShare", winPath(argsFile, w.driveC)]);
  try {
    await client.waitFor(/READY\n/, 60_000);
    fuse!.stop();
    fs.writeFileSync(stopped, "");
    await client.waitFor(/HUNG\n/, 60_000);
  } finally {
    fuse!.resume();
    fs.writeFileSync(resumed, "");
  }
  await client.exited;
  const out = client.output();
  const line = out.split("\n").find((l) => l.startsWith("REPORT "));
  assert.ok(line, `client printed no report:\n${out}\ndaemon:\n${server!.output().slice(-3000)}`);
  const r = JSON.parse(line.slice("REPORT ".length));
  assert.ok(!r.fatal, r.fatal);
  assert.equal(r.warmMade, true);

  // Per kind: the filesystem calls and the volume call (Win32 through the shared limiter) need libuv's
  // pool; the System call's time under Wine is the PowerShell pool's restart backoff (no PowerShell).
  const kinds = ["mkdir", "exists", "volume", "system"] as const;
  const bound = (k: (typeof kinds)[number]) => Math.max(500, 3 * p99(r.baseline[k]) + 250); // relative to this run on a loaded machine
  const fig = (sample: Record<string, number[]>) => kinds.map((k) => `${k} ${p99(sample[k]).toFixed(0)}`).join(", ");
  console.log(
    `# ${HUNG} held on Q:\\ (load ${load()}): other calls' p99 in ms — baseline: ${fig(r.baseline)}; while the gate held them: ${fig(r.whileWaiting)}; ` +
      `after Q:\\ was marked: ${fig(r.afterMarked)}, then ${fig(r.again)}; later call under Q:\\ ${r.later.ms.toFixed(0)} ms; recovery ${r.recovery.ms.toFixed(0)} ms`,
  );
  assert.deepEqual(r.otherErrors, [], "no other call hung, timed out or failed Unavailable");
  // Three samples while calls are held (the gate's wait, then twice after Q:\ was marked): this shared
  // 2-core machine stalls a process for a second now and then with no hang at all, so a kind fails
  // when two samples breach its bound; none may come near the gate's 5 s wait (ungated, Mkdir and
  // the volume call met their 10 s deadline every time).
  const samples = [r.whileWaiting, r.afterMarked, r.again] as Record<string, number[]>[];
  for (const k of kinds) {
    const breaches = samples.filter((x) => p99(x[k]) > bound(k)).length;
    assert.ok(breaches <= 1, `${k}: p99 above ${bound(k).toFixed(0)} ms in ${breaches} of 3 samples (${samples.map((x) => p99(x[k]).toFixed(0)).join(", ")} ms)`);
    for (const x of samples) assert.ok(p99(x[k]) < 3000, `${k}: p99 ${p99(x[k]).toFixed(0)} ms`);
  }
  for (const k of ["mkdir", "exists", "volume"] as const) {
    assert.ok(samples.filter((x) => p99(x[k]) >= 1000).length <= 1, `${k}: p99 well under 1 s in at least 2 of 3 samples`);
  }

  const unavailable = r.codesBeforeResume.filter((c: number) => c === 14).length;
  assert.ok(unavailable >= HUNG - 3, `the held calls fail Unavailable but the gate's 3 (${unavailable} of ${r.codesBeforeResume.length} settled: ${[...new Set(r.codesBeforeResume)].join(",")})`);
  assert.equal(r.later.code, 14, `a later call under Q:\\ fails Unavailable: ${JSON.stringify(r.later)}`);
  assert.match(r.later.message, /Q:\\ is not responding: it has not answered for \d+\.\d s/);
  assert.ok(r.later.ms < 500, `at once (${r.later.ms} ms)`);

  assert.ok("exists" in r.recovery.attempts.at(-1), `calls under Q:\\ answer again: ${JSON.stringify(r.recovery)}`);
  assert.ok(r.recovery.ms <= 1000, `within 1 s of the drive answering (${r.recovery.ms} ms)`);
  assert.equal(r.codes.length, HUNG, "every held call answered");
  assert.equal(r.madeAfter, true);
  assert.equal(server!.child.exitCode, null);
});
