// mountOnDir's undo, deterministic: a libc double around the real one renames the target's parent
// away right after mount(2) (what a racing rename does) and, when asked, fails the first umount2
// calls. Root only (real tmpfs mounts in a temporary directory).
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { mountOnDir } from "./anchored-mount.ts";
import { loadLibc, type Libc } from "../kernel/libc.ts";
import { CsiProxyError, Code } from "../../../errors.ts";

const skip = process.platform !== "linux" ? "Linux only" : process.getuid?.() !== 0 ? "needs root (mount)" : false;

function mountPointsOf(source: string): string[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync("/proc/self/mountinfo", "utf8").split("\n").filter(Boolean).map((l) => l.split(" ")).filter((f) => f[f.indexOf("-", 6) + 2] === source).map((f) => unescape(f[4]));
}

describe("mountOnDir undo", { skip }, () => {
  const root = mkdtempSync(path.join(tmpdir(), "csi-undo-"));
  after(() => {
    for (const mp of readFileSync("/proc/self/mountinfo", "utf8").split("\n").map((l) => l.split(" ")[4]).filter((mp) => mp?.startsWith(root)).reverse()) execFileSync("umount", ["-l", mp]);
    rmSync(root, { recursive: true, force: true });
  });

  /** The real libc; mount also moves `<base>/p` to `<base>/moved`; umount2 fails `failures` times first. */
  async function movingLibc(base: string, failures: number): Promise<Libc & { umounts: number }> {
    const real = await loadLibc();
    const lc = {
      umounts: 0,
      async mount(...args: Parameters<Libc["mount"]>) {
        await real.mount(...args);
        renameSync(path.join(base, "p"), path.join(base, "moved"));
      },
      async umount2(target: string, flags: number) {
        lc.umounts++;
        if (failures-- > 0) throw Object.assign(new Error("umount2: EBUSY"), { code: "EBUSY" });
        await real.umount2(target, flags);
      },
      syncfs: (fd: number, timeoutMs?: number) => real.syncfs(fd, timeoutMs),
    };
    return lc;
  }

  it("answers 'mount undone' only when the mount is gone", async () => {
    const base = path.join(root, "a");
    mkdirSync(path.join(base, "p", "target"), { recursive: true });
    const libc = await movingLibc(base, 0);
    const src = `csi-undo-${process.pid}-a`;
    await assert.rejects(mountOnDir(libc, src, path.join(base, "p", "target"), "tmpfs"), (err: unknown) => {
      assert.ok(err instanceof CsiProxyError && err.code === Code.FailedPrecondition);
      assert.match(err.message, /moved to .*\/a\/moved\/target while mounting; mount undone$/);
      return true;
    });
    assert.deepEqual(mountPointsOf(src), []);
  });

  it("a failed undo names where the mount is; the retry removes it and logs every attempt", async () => {
    const base = path.join(root, "b");
    mkdirSync(path.join(base, "p", "target"), { recursive: true });
    const libc = await movingLibc(base, 3); // the undo's two tries and the first retry fail
    const src = `csi-undo-${process.pid}-b`;
    const lines: string[] = [];
    const log = { info: (m: string) => lines.push(`I ${m}`), warning: (m: string) => lines.push(`W ${m}`) };
    const moved = path.join(base, "moved", "target");
    await assert.rejects(mountOnDir(libc, src, path.join(base, "p", "target"), "tmpfs", { log, retryDelaysMs: [50, 50, 50] }), (err: unknown) => {
      assert.ok(err instanceof CsiProxyError && err.code === Code.FailedPrecondition);
      assert.doesNotMatch(err.message, /mount undone/);
      assert.ok(err.message.includes(`still mounted at ${moved} (mount id `), err.message);
      assert.match(err.message, /retries unmounting it \(3 attempts within 1 s\)/);
      return true;
    });
    assert.deepEqual(mountPointsOf(src), [moved], "left where the answer says");
    // the retry logs after it has seen the mount gone: wait for both, not only for the mount
    for (let i = 0; i < 100 && (mountPointsOf(src).length || lines.length < 2); i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(mountPointsOf(src), [], "the retry removed it");
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.match(lines[0], /^W cleanup retry 1\/3 of mount \d+ of csi-undo-\S+ at .*: failed|^W cleanup retry 1\/3 .*still left/);
    assert.match(lines[1], /^I cleanup retry 2\/3 of mount .*: done, nothing left$/);
  });

  it("a retry that finds the mount back at the asked target keeps it", async () => {
    const base = path.join(root, "d");
    mkdirSync(path.join(base, "p", "target"), { recursive: true });
    const libc = await movingLibc(base, 1_000); // every umount2 fails: only the retry's own check can stop it
    const src = `csi-undo-${process.pid}-d`;
    const lines: string[] = [];
    const log = { info: (m: string) => lines.push(m), warning: (m: string) => lines.push(m) };
    await assert.rejects(mountOnDir(libc, src, path.join(base, "p", "target"), "tmpfs", { log, retryDelaysMs: [300, 300] }), /still mounted at/);
    renameSync(path.join(base, "moved"), path.join(base, "p")); // exchanged back before the first retry
    for (let i = 0; i < 100 && lines.length < 1; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0], /^cleanup retry 1\/2 .*: stopped: .* is now mounted at the asked target .*\/d\/p\/target; kept$/);
    assert.deepEqual(mountPointsOf(src), [path.join(base, "p", "target")]);
  });

  it("the retry gives up after its schedule and says so", async () => {
    const base = path.join(root, "c");
    mkdirSync(path.join(base, "p", "target"), { recursive: true });
    const libc = await movingLibc(base, 1_000);
    const src = `csi-undo-${process.pid}-c`;
    const lines: string[] = [];
    const log = { info: (m: string) => lines.push(m), warning: (m: string) => lines.push(m) };
    await assert.rejects(mountOnDir(libc, src, path.join(base, "p", "target"), "tmpfs", { log, retryDelaysMs: [10, 10] }), /still mounted at/);
    for (let i = 0; i < 100 && lines.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(lines.length, 2);
    assert.match(lines[1], /cleanup retry 2\/2 .*giving up, remove it by hand$/);
    assert.deepEqual(mountPointsOf(src), [path.join(base, "moved", "target")]);
  });
});
