/**
 * Under Wine: a Win32 call that does not return must not freeze the daemon.
 *
 * The blocking is real: Wine's GetVolumeNameForVolumeMountPointW asks the mount manager
 * (mountmgr.sys, hosted by winedevice.exe) through DeviceIoControl. The test stops the prefix's
 * winedevice.exe processes (SIGSTOP), so GetClosestVolumeIDFromTargetPath hangs inside that call,
 * exactly as a call on a dead SMB server or a stuck disk hangs on Windows. Meanwhile the client
 * calls two other pipes and the held call's own pipe (requests the daemon answers from its own
 * checks: under Wine every file stat also asks the mount manager): they must answer at once, and
 * the held call must still be pending. After SIGCONT the held call completes with the volume id. With the call made on the JS
 * thread (koffi's synchronous form) the other pipes would answer only after the release.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { startWine, winPath, wineSuite, type Background } from "./wine-harness.ts";

let server: Background | undefined;
const { w, skip } = await wineSuite("event-loop", {
  async before(w) {
    server = startWine(w, [w.exeWin, `-kubelet-path=${w.work.win}\\kubelet`, "-v=1"]);
    await server.waitFor(/Serving 23 endpoints/, 90_000);
  },
  after: () => server?.kill(),
});

/** The winedevice.exe processes of this suite's prefix (never another prefix's). */
function wineDevices(prefix: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (!/winedevice\.exe/i.test(cmdline)) continue;
      const env = fs.readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (env.includes(`WINEPREFIX=${prefix}`)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

test("a Win32 call held inside the mount manager does not stop other pipes from answering", { skip, timeout: 300_000 }, async () => {
  const argsFile = path.join(w.work.linux, "args-held.json");
  fs.writeFileSync(argsFile, JSON.stringify({ kubelet: `${w.work.win}\\kubelet` }));
  const client = startWine(w, [w.nodeWin, w.clientWin, "held", winPath(argsFile, w.driveC)]);
  await client.waitFor(/READY\n/, 120_000);
  const devices = wineDevices(w.prefix);
  assert.ok(devices.length > 0, "winedevice.exe (the mount manager's host) runs in the prefix");
  try {
    for (const pid of devices) process.kill(pid, "SIGSTOP");
    await client.waitFor(/OTHERS .*\n/, 60_000);
  } finally {
    for (const pid of devices) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // exited
      }
    }
  }
  await client.exited;
  const out = client.output();
  const line = out.split("\n").find((l) => l.startsWith("REPORT "));
  assert.ok(line, `client printed no report:\n${out}`);
  const report = JSON.parse(line.slice("REPORT ".length));
  assert.ok(!report.fatal, report.fatal);
  assert.equal(report.others.length, 9);
  for (const o of report.others) assert.equal(o.result.code, 3, `answered (InvalidArgument from the daemon's checks): ${JSON.stringify(o)}`);
  const slowest = Math.max(...report.others.map((o: { ms: number }) => o.ms));
  assert.ok(slowest < 3000, `other pipes answered while the call was held (slowest ${slowest} ms): ${JSON.stringify(report.others)}`);
  assert.equal(report.heldPendingAfterOthers, true, "the held call was still inside the mount manager while the others answered");
  assert.match(report.held.ok?.volumeId ?? "", /^\\\\\?\\Volume\{[0-9a-f-]+\}\\$/i, `after the release the held call completes: ${JSON.stringify(report.held)}`);
  // and the daemon is still healthy
  assert.equal(server!.child.exitCode, null);
});
