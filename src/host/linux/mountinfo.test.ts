import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { mountsInAnyNamespace } from "./mountinfo.ts";

const line = (id: number, dev: string, mountPoint: string) => `${id} 1 ${dev} / ${mountPoint} rw,relatime shared:1 - ext4 /dev/x rw\n`;

test("mountsInAnyNamespace: every namespace read once (first pid), the device's mounts in each; unreadable processes skipped", async () => {
  const proc = mkdtempSync(path.join(tmpdir(), "csi-proxy-proc-"));
  try {
    const pid = (n: number, ns: string | null, mountinfo: string | null) => {
      mkdirSync(path.join(proc, String(n), "ns"), { recursive: true });
      if (ns !== null) symlinkSync(ns, path.join(proc, String(n), "ns", "mnt"));
      if (mountinfo !== null) writeFileSync(path.join(proc, String(n), "mountinfo"), mountinfo);
    };
    pid(1, "mnt:[100]", line(20, "8:1", "/") + line(21, "7:3", "/var/lib/kubelet/x"));
    pid(2, "mnt:[100]", line(30, "7:3", "/never-read")); // same namespace as pid 1
    pid(10, "mnt:[200]", line(40, "7:30", "/other") + line(41, "7:3", "/data\\040dir"));
    pid(11, null, line(50, "7:3", "/no-ns-link")); // namespace link unreadable
    pid(12, "mnt:[300]", null); // exited between readlink and read
    mkdirSync(path.join(proc, "self"));
    assert.deepEqual(await mountsInAnyNamespace(7, 3, proc), [
      { pid: 1, mountPoint: "/var/lib/kubelet/x", mountId: 21 },
      { pid: 10, mountPoint: "/data dir", mountId: 41 },
    ]);
    assert.deepEqual(await mountsInAnyNamespace(9, 9, proc), []);
  } finally {
    rmSync(proc, { recursive: true, force: true });
  }
});

test("mountsInAnyNamespace on the real /proc: this process's own root mount is found", async () => {
  const { readFileSync } = await import("node:fs");
  const root = readFileSync("/proc/self/mountinfo", "utf8").split("\n").find((l) => l.split(" ")[4] === "/");
  const [major, minor] = root!.split(" ")[2].split(":").map(Number);
  const found = await mountsInAnyNamespace(major, minor);
  assert.ok(found.some((m) => m.mountPoint === "/"), JSON.stringify(found.slice(0, 5)));
});
