import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { scanDeviceOpeners, type OpenerScanStats } from "./device-openers.ts";
import { Code } from "../../../errors.ts";
import { rejectsWithCode } from "../../../../test/helpers/assert-coded.ts";

/** A /proc-shaped tree: pid → descriptor link texts, mount table, namespace. */
function fakeProc(pids: Record<number, { fds: string[]; mountinfo?: string; ns?: string }>): string {
  const proc = mkdtempSync(path.join(tmpdir(), "csi-proxy-openers-"));
  for (const [pid, p] of Object.entries(pids)) {
    mkdirSync(path.join(proc, pid, "fd"), { recursive: true });
    mkdirSync(path.join(proc, pid, "ns"));
    symlinkSync(p.ns ?? "mnt:[1]", path.join(proc, pid, "ns", "mnt"));
    writeFileSync(path.join(proc, pid, "mountinfo"), p.mountinfo ?? "");
    writeFileSync(path.join(proc, pid, "maps"), "");
    p.fds.forEach((text, i) => symlinkSync(text, path.join(proc, pid, "fd", String(i))));
  }
  return proc;
}

const fuseAt = (mp: string) => `40 1 0:55 / ${mp} rw,nosuid,nodev - fuse.sshfs remote: rw\n`;

test("sockets, pipes and anonymous inodes are skipped by their link text; files on FUSE/network mounts are never stat'ed; the daemon itself is not scanned", async () => {
  const proc = fakeProc({
    10: { fds: ["socket:[123]", "pipe:[9]", "anon_inode:[eventpoll]", "net:[4026531840]", "/etc/hostname"] },
    11: { fds: ["/mnt/remote/file", "/mnt/remote", "/mnt/remoteX/y"], mountinfo: fuseAt("/mnt/remote"), ns: "mnt:[2]" },
    12: { fds: ["/etc/hostname"] },
  });
  try {
    const stats: OpenerScanStats = { processes: 0, descriptors: 0, stats: 0, skipped: 0 };
    assert.deepEqual(await scanDeviceOpeners([{ major: 7, minor: 0 }], { procRoot: proc, selfPid: 12 }, stats), []);
    // pid 10: only /etc/hostname is stat'ed; pid 11: two under the FUSE mount skipped, /mnt/remoteX/y stat'ed; pid 12 is "us".
    assert.deepEqual(stats, { via: "procfs", processes: 2, descriptors: 8, stats: 2, skipped: 2 });
  } finally {
    rmSync(proc, { recursive: true, force: true });
  }
});

test("a scan that outlives its deadline is Unavailable, saying how far it got", async () => {
  const pids: Record<number, { fds: string[] }> = {};
  for (let i = 1; i <= 200; i++) pids[i] = { fds: Array.from({ length: 10 }, () => "/etc/hostname") };
  const proc = fakeProc(pids);
  try {
    await rejectsWithCode(scanDeviceOpeners([{ major: 7, minor: 0 }], { procRoot: proc, deadlineMs: 1 }), Code.Unavailable, /took longer than 1 ms \(\d+ of 200 processes/);
  } finally {
    rmSync(proc, { recursive: true, force: true });
  }
});
