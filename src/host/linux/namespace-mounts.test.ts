import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createNamespaceMounts } from "./namespace-mounts.ts";
import type { MountChangeProbe } from "./mount-table-cache.ts";

const line = (id: number, dev: string, mountPoint: string) => `${id} 1 ${dev} / ${mountPoint} rw,relatime shared:1 - ext4 /dev/x rw\n`;

/** A fake /proc; `probes` are scripted: each reports a change once per `change(file)`. */
function fakeProc() {
  const proc = mkdtempSync(path.join(tmpdir(), "csi-proxy-proc-"));
  const pending = new Set<string>();
  const open = new Set<string>();
  const pid = (n: number, ns: string | null, mountinfo: string | null) => {
    mkdirSync(path.join(proc, String(n), "ns"), { recursive: true });
    if (ns !== null) symlinkSync(ns, path.join(proc, String(n), "ns", "mnt"));
    if (mountinfo !== null) writeFileSync(path.join(proc, String(n), "mountinfo"), mountinfo);
  };
  const openProbe = async (file: string): Promise<MountChangeProbe> => {
    readFileSync(file); // rejects like the real one when the process is gone
    open.add(file);
    return {
      changed: () => pending.delete(file),
      close: async () => void open.delete(file),
    };
  };
  return { proc, pid, openProbe, open, change: (n: number) => pending.add(path.join(proc, String(n), "mountinfo")), cleanup: () => rmSync(proc, { recursive: true, force: true }) };
}

describe("createNamespaceMounts()", () => {
  it("every namespace read once (first pid), the device's mounts in each; unreadable processes skipped", async () => {
    const f = fakeProc();
    const nm = createNamespaceMounts({ procRoot: f.proc, openProbe: f.openProbe });
    try {
      f.pid(1, "mnt:[100]", line(20, "8:1", "/") + line(21, "7:3", "/var/lib/kubelet/x"));
      f.pid(2, "mnt:[100]", line(30, "7:3", "/never-read")); // same namespace as pid 1
      f.pid(10, "mnt:[200]", line(40, "7:30", "/other") + line(41, "7:3", "/data\\040dir"));
      f.pid(11, null, line(50, "7:3", "/no-ns-link")); // namespace link unreadable
      f.pid(12, "mnt:[300]", null); // exited between readlink and read
      mkdirSync(path.join(f.proc, "self"));
      assert.deepEqual(await nm.mountsOf(7, 3), [
        { pid: 1, mountPoint: "/var/lib/kubelet/x" },
        { pid: 10, mountPoint: "/data dir" },
      ]);
      assert.deepEqual(await nm.mountsOf(9, 9), []);
      assert.equal(nm.cachedNamespaces(), 2);
    } finally {
      await nm.close();
      f.cleanup();
    }
  });

  it("a table is re-read only after its probe reports a change; a device it mounts is always read fresh", async () => {
    const f = fakeProc();
    const nm = createNamespaceMounts({ procRoot: f.proc, openProbe: f.openProbe });
    try {
      f.pid(1, "mnt:[100]", line(20, "8:1", "/"));
      f.pid(10, "mnt:[200]", line(40, "7:30", "/other"));
      assert.deepEqual(await nm.mountsOf(7, 3), []);
      // Written without a change reported: not read (this is what the probe saves).
      writeFileSync(path.join(f.proc, "10", "mountinfo"), line(40, "7:30", "/other") + line(41, "7:3", "/unreported"));
      assert.deepEqual(await nm.mountsOf(7, 3), []);
      f.change(10);
      assert.deepEqual(await nm.mountsOf(7, 3), [{ pid: 10, mountPoint: "/unreported" }]);
      // The device is in the remembered set: its mount points are read now, not remembered.
      writeFileSync(path.join(f.proc, "10", "mountinfo"), line(40, "7:30", "/other") + line(42, "7:3", "/moved"));
      assert.deepEqual(await nm.mountsOf(7, 3), [{ pid: 10, mountPoint: "/moved" }]);
    } finally {
      await nm.close();
      f.cleanup();
    }
  });

  it("lets a namespace's probe go when its process left it, at the next call and by the sweep", async () => {
    const f = fakeProc();
    const nm = createNamespaceMounts({ procRoot: f.proc, openProbe: f.openProbe, sweepMs: 20 });
    try {
      f.pid(1, "mnt:[100]", line(20, "8:1", "/"));
      f.pid(10, "mnt:[200]", line(40, "7:30", "/other"));
      f.pid(11, "mnt:[300]", line(50, "7:31", "/other"));
      await nm.mountsOf(7, 3);
      assert.equal(f.open.size, 3);
      rmSync(path.join(f.proc, "10"), { recursive: true });
      for (let i = 0; i < 100 && f.open.size > 2; i++) await sleep(10);
      assert.equal(f.open.size, 2, "the sweep closed the probe of the namespace whose process is gone");
      rmSync(path.join(f.proc, "11"), { recursive: true });
      await nm.mountsOf(7, 3);
      assert.equal(f.open.size, 1);
    } finally {
      await nm.close();
      f.cleanup();
    }
    assert.equal(f.open.size, 0);
  });

  it("closes every probe after a quiet period", async () => {
    const f = fakeProc();
    const nm = createNamespaceMounts({ procRoot: f.proc, openProbe: f.openProbe, sweepMs: 10, idleMs: 50 });
    try {
      f.pid(1, "mnt:[100]", line(20, "8:1", "/"));
      await nm.mountsOf(7, 3);
      assert.equal(f.open.size, 1);
      for (let i = 0; i < 200 && f.open.size > 0; i++) await sleep(10);
      assert.equal(f.open.size, 0);
    } finally {
      await nm.close();
      f.cleanup();
    }
  });

  it("on the real /proc: this process's own root mount is found", async () => {
    const nm = createNamespaceMounts();
    try {
      const root = readFileSync("/proc/self/mountinfo", "utf8").split("\n").find((l) => l.split(" ")[4] === "/");
      const [major, minor] = root!.split(" ")[2].split(":").map(Number);
      const found = await nm.mountsOf(major, minor);
      assert.ok(found.some((m) => m.mountPoint === "/"), JSON.stringify(found.slice(0, 5)));
    } finally {
      await nm.close();
    }
  });
});

const root = process.getuid?.() === 0;
describe("createNamespaceMounts() with real namespaces", { skip: root ? false : "needs root (unshare, mount)" }, () => {
  it("a mount and an unmount in another namespace between two calls are seen by the second; the probe goes with the namespace", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "ns-mounts-"));
    // A process in a mount namespace of its own whose mounts do not propagate back to ours.
    const child = spawn("unshare", ["--mount", "--propagation", "private", "sleep", "300"], { stdio: "ignore" });
    const nm = createNamespaceMounts({ sweepMs: 20 });
    try {
      const own = readlinkSync("/proc/self/ns/mnt");
      let ns = own;
      for (let i = 0; i < 300 && ns === own; i++) {
        await sleep(10);
        try {
          ns = readlinkSync(`/proc/${child.pid}/ns/mnt`);
        } catch {}
      }
      assert.notEqual(ns, own, "the child is in a namespace of its own");
      // Warm: every namespace's table remembered, this one's included.
      await nm.mountsOf(0, 0);
      const cached = nm.cachedNamespaces();
      assert.ok(cached >= 2, `namespaces remembered: ${cached}`);

      execFileSync("nsenter", ["-t", String(child.pid), "-m", "mount", "-t", "tmpfs", "-o", "size=1m", "nsmounts-test", dir]);
      const entry = readFileSync(`/proc/${child.pid}/mountinfo`, "utf8").split("\n").find((l) => l.split(" ")[4] === dir);
      assert.ok(entry, "mounted in the child's namespace");
      assert.ok(!readFileSync("/proc/self/mountinfo", "utf8").includes(` ${dir} `), "not in ours");
      const [major, minor] = entry.split(" ")[2].split(":").map(Number);
      assert.deepEqual(
        (await nm.mountsOf(major, minor)).filter((m) => m.pid === child.pid),
        [{ pid: child.pid, mountPoint: dir }],
        "a mount made in another namespace after its table was remembered is seen",
      );
      execFileSync("nsenter", ["-t", String(child.pid), "-m", "umount", dir]);
      assert.deepEqual(await nm.mountsOf(major, minor), [], "its unmount is seen");

      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      for (let i = 0; i < 200 && nm.cachedNamespaces() >= cached; i++) await sleep(10);
      assert.equal(nm.cachedNamespaces(), cached - 1, "the probe pinning the dead namespace was closed");
    } finally {
      child.kill("SIGKILL");
      await nm.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
