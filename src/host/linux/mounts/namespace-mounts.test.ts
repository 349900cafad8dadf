import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createNamespaceMounts } from "./namespace-mounts.ts";
import type { MountIdSource } from "./mount-ids.ts";
import { openMountIdSource } from "./mount-ids.ts";

const line = (id: number, dev: string, mountPoint: string) => `${id} 1 ${dev} / ${mountPoint} rw,relatime shared:1 - ext4 /dev/x rw\n`;

/** A fake /proc and a scripted id source: a namespace's ids change on `change(ns)`; `gone(ns)` makes its listing fail. */
function fakeProc() {
  const proc = mkdtempSync(path.join(tmpdir(), "csi-proxy-proc-"));
  const generation = new Map<string, number>();
  const listed: string[] = [];
  const pid = (n: number, ns: string | null, mountinfo: string | null) => {
    mkdirSync(path.join(proc, String(n), "ns"), { recursive: true });
    if (ns !== null) symlinkSync(ns, path.join(proc, String(n), "ns", "mnt"));
    if (mountinfo !== null) writeFileSync(path.join(proc, String(n), "mountinfo"), mountinfo);
  };
  const nsIds = new Map<string, bigint>();
  const source: MountIdSource = {
    namespaceId(n) {
      try {
        const ns = readlinkSync(path.join(proc, String(n), "ns", "mnt"));
        if (!nsIds.has(ns)) nsIds.set(ns, BigInt(nsIds.size + 1));
        return nsIds.get(ns)!;
      } catch {
        return null;
      }
    },
    mountIds(id) {
      const ns = [...nsIds].find(([, v]) => v === id)?.[0];
      if (ns === undefined || generation.get(ns) === -1) return null;
      listed.push(ns);
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(BigInt(generation.get(ns) ?? 0));
      return b;
    },
  };
  return {
    proc,
    pid,
    source,
    listed,
    change: (ns: string) => generation.set(ns, (generation.get(ns) ?? 0) + 1),
    cleanup: () => rmSync(proc, { recursive: true, force: true }),
  };
}

describe("createNamespaceMounts()", () => {
  it("every namespace read once (first pid), the device's mounts in each; unreadable processes skipped", async () => {
    for (const ids of [true, false]) {
      const f = fakeProc();
      const nm = createNamespaceMounts({ procRoot: f.proc, ids: async () => (ids ? f.source : null) });
      try {
        f.pid(1, "mnt:[100]", line(20, "8:1", "/") + line(21, "7:3", "/var/lib/kubelet/x"));
        f.pid(2, "mnt:[100]", line(30, "7:3", "/never-read")); // same namespace as pid 1
        f.pid(10, "mnt:[200]", line(40, "7:30", "/other") + line(41, "7:3", "/data\\040dir"));
        f.pid(11, null, line(50, "7:3", "/no-ns-link")); // namespace link unreadable
        f.pid(12, "mnt:[300]", null); // exited between readlink and read
        mkdirSync(path.join(f.proc, "self"));
        assert.deepEqual(await nm.mountsOf(7, 3), [
          { pid: 1, mountPoint: "/var/lib/kubelet/x", mountId: 21 },
          { pid: 10, mountPoint: "/data dir", mountId: 41 },
        ]);
        assert.deepEqual(await nm.mountsOf(9, 9), []);
        assert.equal(nm.rememberedNamespaces(), ids ? 2 : 0);
      } finally {
        f.cleanup();
      }
    }
  });

  it("a table is re-read only after its mount ids changed; a device it mounts is always read fresh", async () => {
    const f = fakeProc();
    const nm = createNamespaceMounts({ procRoot: f.proc, ids: async () => f.source });
    try {
      f.pid(1, "mnt:[100]", line(20, "8:1", "/"));
      f.pid(10, "mnt:[200]", line(40, "7:30", "/other"));
      assert.deepEqual(await nm.mountsOf(7, 3), []);
      assert.equal(nm.lastReads(), 2);
      // Written while the ids stay the same: not read (this is what the ids save).
      writeFileSync(path.join(f.proc, "10", "mountinfo"), line(40, "7:30", "/other") + line(41, "7:3", "/unlisted"));
      assert.deepEqual(await nm.mountsOf(7, 3), []);
      assert.equal(nm.lastReads(), 0);
      f.change("mnt:[200]");
      assert.deepEqual(await nm.mountsOf(7, 3), [{ pid: 10, mountPoint: "/unlisted", mountId: 41 }]);
      assert.equal(nm.lastReads(), 1);
      // The device is in the remembered set: its mount points are read now, not remembered.
      writeFileSync(path.join(f.proc, "10", "mountinfo"), line(40, "7:30", "/other") + line(42, "7:3", "/moved"));
      assert.deepEqual(await nm.mountsOf(7, 3), [{ pid: 10, mountPoint: "/moved", mountId: 42 }]);
    } finally {
      f.cleanup();
    }
  });

  it("forgets a namespace no process is in; a remembered id that lists nothing is looked up again", async () => {
    const f = fakeProc();
    const nm = createNamespaceMounts({ procRoot: f.proc, ids: async () => f.source });
    try {
      f.pid(1, "mnt:[100]", line(20, "8:1", "/"));
      f.pid(10, "mnt:[200]", line(40, "7:30", "/other"));
      await nm.mountsOf(7, 3);
      assert.equal(nm.rememberedNamespaces(), 2);
      rmSync(path.join(f.proc, "10"), { recursive: true });
      await nm.mountsOf(7, 3);
      assert.equal(nm.rememberedNamespaces(), 1);
      f.change("mnt:[100]");
      await nm.mountsOf(7, 3);
      assert.equal(nm.lastReads(), 1);
    } finally {
      f.cleanup();
    }
  });

  it("on the real /proc: this process's own root mount is found", async () => {
    const nm = createNamespaceMounts();
    const root = readFileSync("/proc/self/mountinfo", "utf8").split("\n").find((l) => l.split(" ")[4] === "/");
    const [major, minor] = root!.split(" ")[2].split(":").map(Number);
    const found = await nm.mountsOf(major, minor);
    assert.ok(found.some((m) => m.mountPoint === "/"), JSON.stringify(found.slice(0, 5)));
  });
});

const root = process.getuid?.() === 0;
describe("createNamespaceMounts() with real namespaces", { skip: root ? false : "needs root (unshare, mount)" }, () => {
  it("a mount and an unmount in another namespace between two calls are seen by the second; (the namespace remembered by its mount ids)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "ns-mounts-"));
    // A process in a mount namespace of its own whose mounts do not propagate back to ours.
    const child = spawn("unshare", ["--mount", "--propagation", "private", "sleep", "300"], { stdio: "ignore" });
    const nm = createNamespaceMounts();
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
      if (await openMountIdSource()) assert.ok(nm.rememberedNamespaces() >= 2, `namespaces remembered: ${nm.rememberedNamespaces()}`);

      execFileSync("nsenter", ["-t", String(child.pid), "-m", "mount", "-t", "tmpfs", "-o", "size=1m", "nsmounts-test", dir]);
      const entry = readFileSync(`/proc/${child.pid}/mountinfo`, "utf8").split("\n").find((l) => l.split(" ")[4] === dir);
      assert.ok(entry, "mounted in the child's namespace");
      assert.ok(!readFileSync("/proc/self/mountinfo", "utf8").includes(` ${dir} `), "not in ours");
      const [major, minor] = entry.split(" ")[2].split(":").map(Number);
      assert.deepEqual(
        (await nm.mountsOf(major, minor)).filter((m) => m.pid === child.pid).map(({ pid, mountPoint }) => ({ pid, mountPoint })),
        [{ pid: child.pid, mountPoint: dir }],
        "a mount made in another namespace after its table was remembered is seen",
      );
      execFileSync("nsenter", ["-t", String(child.pid), "-m", "umount", dir]);
      assert.deepEqual(await nm.mountsOf(major, minor), [], "its unmount is seen");

    } finally {
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
