// The kernel's task listings (kernel-task-listing.ts) against the walk of /proc
// (device-openers.ts "procfs"): on a loop device of this test's own image, held read-write, read-only,
// only mapped, through a device node outside /dev (mknod in a temporary directory), and by a process
// in another mount namespace, both ways name the same processes with the same access; the daemon
// itself is left out; a holder that exits is gone from the next listing; a holder in another PID
// namespace is named by this namespace's pid. Each process's mount namespace is the one its
// /proc/<pid>/ns/mnt link names. The daemon's stop closes the listing's BPF links (no descriptor
// left), and the next scan opens it again. Signals arriving during the programs' load (a profiler's
// SIGPROF every 50 µs) do not make the listing unavailable.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, openSync, closeSync, readlinkSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openKernelTaskListing, closeKernelTaskListing, kernelListingUnavailableReason } from "./kernel-task-listing.ts";
import { startDaemon } from "../../../daemon.ts";
import { createLogger } from "../../../log/klog.ts";
import { scanDeviceOpeners } from "../block/device-openers.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../../../../test/helpers/loop-device.ts";

const skip = loopDeviceSkipReason() ?? ((await openKernelTaskListing()) ? null : `the kernel's listing cannot be had here: ${kernelListingUnavailableReason()}`);
if (skip) process.stderr.write(`kernel opener listing suite skipped: ${skip}\n`);

const HOLDER = path.join(import.meta.dirname, "../../../../test/helpers/device-holder.ts");

describe("the kernel's task listings give the /proc walk's answers", { skip: skip ?? false }, () => {
  let dir: string;
  let loop: LoopDevice;
  const holders: ChildProcess[] = [];
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-bpf-openers-"));
    loop = createLoopDevice(dir, 8 * 1024 * 1024, "openers");
  });
  after(() => {
    for (const h of holders) h.kill("SIGKILL");
    loop?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const hold = (mode: string, file: string, argv0: string[] = []): Promise<ChildProcess> => {
    const [cmd, ...args] = [...argv0, process.execPath, HOLDER, mode, file];
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "inherit"] });
    holders.push(child);
    return new Promise((resolve, reject) => {
      child.stdout!.once("data", (b: Buffer) => (String(b).startsWith("ready") ? resolve(child) : reject(new Error(String(b)))));
      child.once("exit", (code) => reject(new Error(`holder exited (${code}) before holding ${file}`)));
    });
  };

  it("same processes, same access, self excluded; an exited holder is gone", async () => {
    const dev = { major: loop.major, minor: loop.minor };
    const node = path.join(dir, "node-outside-dev");
    execFileSync("mknod", [node, "b", String(loop.major), String(loop.minor)]);
    const rw = await hold("read-write", loop.device);
    const ro = await hold("read", node);
    const mapped = await hold("mapped", loop.device);
    const otherNs = await hold("read-write", node, ["unshare", "--mount", "--propagation", "private"]);
    const selfFd = openSync(loop.device, "r");
    try {
      const expected = [
        { pid: rw.pid!, access: "read-write" },
        { pid: ro.pid!, access: "read" },
        { pid: mapped.pid!, access: "mapped" },
        { pid: otherNs.pid!, access: "read-write" }, // unshare execs the holder: same pid
      ].sort((a, b) => a.pid - b.pid);
      const kernel = await scanDeviceOpeners([dev], { via: "kernel" });
      const walked = await scanDeviceOpeners([dev], { via: "procfs" });
      const shape = (list: typeof kernel) => list.map((o) => ({ pid: o.pid, access: o.access }));
      assert.deepEqual(shape(kernel), expected);
      assert.deepEqual(shape(walked), expected);
      assert.deepEqual(kernel, walked, "same commands and devices too");
      assert.equal(kernel[0].command, "node");
      // The daemon itself is reported only when it is not "self".
      const withSelf = await scanDeviceOpeners([dev], { via: "kernel", selfPid: 0 });
      assert.ok(withSelf.some((o) => o.pid === process.pid && o.access === "read"));
      // Another device's openers are not this one's.
      assert.deepEqual(await scanDeviceOpeners([{ major: loop.major, minor: loop.minor + 1 }], { via: "kernel" }), []);
      // Only the pids asked about.
      assert.deepEqual(shape(await scanDeviceOpeners([dev], { via: "kernel", pids: [ro.pid!] })), [{ pid: ro.pid!, access: "read" }]);
      // Each process's mount namespace, as its /proc/<pid>/ns/mnt link names it.
      const namespaces = await (await openKernelTaskListing())!.mountNamespaces();
      for (const pid of [process.pid, otherNs.pid!, rw.pid!]) assert.equal(namespaces.get(pid), readlinkSync(`/proc/${pid}/ns/mnt`), `pid ${pid}`);
      assert.notEqual(namespaces.get(otherNs.pid!), namespaces.get(process.pid));
      const gone = new Promise((r) => rw.once("exit", r));
      rw.kill("SIGKILL");
      await gone;
      assert.deepEqual(shape(await scanDeviceOpeners([dev], { via: "kernel" })), expected.filter((e) => e.pid !== rw.pid));
    } finally {
      closeSync(selfFd);
    }
  });

  it("a holder in another PID namespace is named by this namespace's pid, both ways", async () => {
    const dev = { major: loop.major, minor: loop.minor };
    // --kill-child: the holder goes with unshare (it would outlive it otherwise, holding the loop device).
    const outer = await hold("read-write", loop.device, ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]);
    // unshare forks the holder: its pid here is unshare's child, not the pid it printed (1 inside).
    const inner = Number(readFileSync(`/proc/${outer.pid}/task/${outer.pid}/children`, "utf8").trim().split(/\s+/)[0]);
    try {
      assert.ok(inner > 0 && inner !== outer.pid, `the holder's pid here: ${inner}`);
      assert.notEqual(readlinkSync(`/proc/${inner}/ns/pid`), readlinkSync("/proc/self/ns/pid"));
      for (const via of ["kernel", "procfs"] as const) {
        const found = (await scanDeviceOpeners([dev], { via })).filter((o) => o.pid === inner || o.pid === outer.pid); // earlier tests' holders aside
        assert.deepEqual(found.map((o) => [o.pid, o.access]), [[inner, "read-write"]], via);
      }
    } finally {
      if (inner > 0) process.kill(inner, "SIGKILL");
      outer.kill("SIGKILL");
    }
  });

  it("the daemon's stop closes the listing's BPF links; the next scan opens them again", async () => {
    const fds = () => readdirSync("/proc/self/fd");
    const bpfLinks = () => fds().filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === "anon_inode:bpf_link";
      } catch {
        return false;
      }
    }).length;
    const config = (n: number) => ({
      platform: "linux" as const,
      kubeletPath: path.join(dir, `kubelet-${n}`),
      workingDirs: [],
      socketDir: path.join(dir, `sockets-${n}`),
      requirePrivacy: true,
      defaultFsType: "ext4" as const,
      stateDir: path.join(dir, `state-${n}`),
      allowedServices: [],
    });
    const logger = createLogger({ verbosity: 0, logToStderr: true, stderr: { write: (_c: string, cb: (err?: Error | null) => void) => cb() } });
    const dev = { major: loop.major, minor: loop.minor };
    // A first daemon opens whatever this process keeps for its life; the second is the one measured.
    for (const n of [1, 2]) {
      await closeKernelTaskListing();
      const before = fds().length;
      assert.equal(bpfLinks(), 0, "no link before the daemon");
      const daemon = await startDaemon(config(n), { logger });
      await scanDeviceOpeners([dev]); // the daemon's in-use verdict: opens the shared listing
      assert.equal(bpfLinks(), 3, "the listing's three links while the daemon runs");
      await daemon.stop();
      assert.equal(bpfLinks(), 0, "no link after the stop");
      if (n === 2) assert.equal(fds().length, before, `descriptors before the daemon ${before}, after its stop ${fds().length}`);
    }
    assert.ok(await openKernelTaskListing(), "opened again after the stop");
    assert.equal(bpfLinks(), 3);
    assert.deepEqual(await scanDeviceOpeners([dev], { via: "kernel" }), await scanDeviceOpeners([dev], { via: "procfs" }));
  });

  it("opens while signals keep arriving (a profiler's SIGPROF every 50 µs): the verifier's EAGAIN does not make it unavailable", () => {
    const module = path.join(import.meta.dirname, "kernel-task-listing.ts");
    const script = `const m = await import(${JSON.stringify(module)}); const k = await m.openKernelTaskListing(); process.stdout.write(JSON.stringify({ open: !!k, why: m.kernelListingUnavailableReason() ?? null }));`;
    for (let i = 0; i < 3; i++) {
      const out = execFileSync(process.execPath, ["--cpu-prof", "--cpu-prof-dir", path.join(dir, "profiles"), "--cpu-prof-interval", "50", "--input-type=module", "-e", script], { encoding: "utf8" });
      assert.deepEqual(JSON.parse(out), { open: true, why: null }, `run ${i + 1}`);
    }
  });
});
