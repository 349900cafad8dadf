// fanotify on a file: who wrote it (pid), readers not reported; and the writer watch's fallback where
// fanotify cannot be had (a process without CAP_SYS_ADMIN): the step still runs, a warning says what
// was watched instead.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { FAN_CLOSE_WRITE, FAN_MODIFY, openFanotify } from "./fanotify.ts";

const skip = process.platform !== "linux" ? "Linux only" : process.getuid?.() !== 0 ? "needs root (CAP_SYS_ADMIN for fanotify_init)" : null;

describe("fanotify", { skip: skip ?? false }, () => {
  const dir = skip ? "" : mkdtempSync(path.join(tmpdir(), "csi-proxy-fanotify-"));
  after(() => dir && rmSync(dir, { recursive: true, force: true }));

  it("names the pid of each writer, not of a reader; drain never waits", async () => {
    const file = path.join(dir, "watched");
    writeFileSync(file, Buffer.alloc(8192));
    const watch = await openFanotify([file]);
    try {
      const started = performance.now();
      assert.deepEqual(watch.drain(), [], "nothing queued: an empty answer at once");
      assert.ok(performance.now() - started < 50, "an empty drain does not wait");
      const reader = spawnSync("dd", [`if=${file}`, "of=/dev/null", "bs=4k", "count=1", "status=none"]);
      const writer = spawnSync("dd", ["if=/dev/zero", `of=${file}`, "bs=4k", "count=1", "conv=notrunc", "status=none"]);
      assert.equal(reader.status, 0);
      assert.equal(writer.status, 0);
      const events = watch.drain();
      assert.deepEqual(events.map((e) => e.pid), [writer.pid], `only the writer: ${JSON.stringify(events)}`);
      assert.equal(events[0].mask & (FAN_MODIFY | FAN_CLOSE_WRITE), FAN_MODIFY | FAN_CLOSE_WRITE, "its write and its close after writing");
      assert.equal(watch.overflowed, false);
    } finally {
      watch.close();
      watch.close(); // idempotent
    }
    assert.deepEqual(watch.drain(), [], "a closed watch reads nothing");
  });

  it("without CAP_SYS_ADMIN: EPERM, and the writer watch runs the step with a warning saying what it watched instead", () => {
    const script = `
      import { openFanotify } from ${JSON.stringify(path.resolve("src/host/linux/kernel/fanotify.ts"))};
      import { withWriterWatch } from ${JSON.stringify(path.resolve("src/host/linux/block/writer-watch.ts"))};
      const code = await openFanotify(["/dev/null"]).then(() => "opened", (e) => e.code);
      const warnings = [];
      const result = await withWriterWatch({ devPath: "/dev/null", operation: "creating the ext4 filesystem", damage: "x" }, async () => 42, { warning: (m) => warnings.push(m) });
      process.stdout.write(JSON.stringify({ code, result, warnings }));
    `;
    const run = spawnSync("setpriv", ["--bounding-set=-sys_admin", "--inh-caps=-sys_admin", process.execPath, "--input-type=module", "-e", script], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout) as { code: string; result: number; warnings: string[] };
    assert.equal(out.code, "EPERM");
    assert.equal(out.result, 42, "the step's result");
    assert.equal(out.warnings.length, 1);
    assert.match(out.warnings[0], /creating the ext4 filesystem on \/dev\/null: fanotify cannot be had here \(EPERM\); writers during the step are looked for only among the device's openers after it/);
  });
});
