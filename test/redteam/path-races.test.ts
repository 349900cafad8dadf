// Red team: path operations raced against a symlink swap. A swapper child
// process flips a directory inside the kubelet dir with a symlink to an outside directory in a tight
// rename() loop while Rmdir(force), RmdirContents, CreateSymlink, MountVolume and UnmountVolume run on
// a path through it; after every attempt the outside files are counted and checksummed, and the mount
// table is checked (the foreign tmpfs outside still mounted, our volume never mounted outside).
// Plus case 7: a bind mount of an outside directory placed inside the kubelet dir.
// In process through createServices (the same services the daemon serves). Linux, root, own loop
// device and tmpfs only. Attempt counts: RACE_ATTEMPTS (fs cases) / RACE_MOUNT_ATTEMPTS; each case is
// also bounded by RACE_CASE_MS. Figures are printed as "race-figures {json}" lines (docs/reliability.md, "Paths").
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, unlinkSync, writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createServices } from "../../src/compose/compose.ts";
import type { Services } from "../../src/groups/services.ts";
import { CsiProxyError } from "../../src/errors.ts";
import { LinuxFilesystemHost } from "../../src/host/linux/filesystem.ts";
import { LinuxSmbHost } from "../../src/host/linux/smb.ts";
import { loadLibc } from "../../src/host/linux/kernel/libc.ts";
import { createLoopDevice, loopDeviceSkipReason, type LoopDevice } from "../helpers/loop-device.ts";
import { StoppableChild } from "../helpers/stoppable-child.ts";

const skip = process.platform !== "linux" ? "Linux only" : loopDeviceSkipReason();
if (skip) process.stderr.write(`path race tests skipped: ${skip}\n`);

const FS_ATTEMPTS = Number(process.env.RACE_ATTEMPTS ?? 1500);
const MOUNT_ATTEMPTS = Number(process.env.RACE_MOUNT_ATTEMPTS ?? 250);
const CASE_MS = Number(process.env.RACE_CASE_MS ?? 4000);
const OUTSIDE_FILES = 60;

/** The swapper: flips <dir>/<name> (a real directory) with <dir>/<name>.link (a symlink) forever. */
const SWAPPER = `
const fs = require("node:fs");
const a = process.argv[1], real = a + ".real", link = a + ".link";
for (;;) {
  try { fs.renameSync(a, real); } catch {}
  try { fs.renameSync(link, a); } catch {}
  try { fs.renameSync(a, link); } catch {}
  try { fs.renameSync(real, a); } catch {}
}`;

/** A stoppable swapper process: runs only between go() and stop(). */
class Swapper extends StoppableChild {
  constructor(target: string) {
    super(spawn(process.execPath, ["-e", SWAPPER, target], { stdio: "ignore" }), "swapper");
    this.stop();
  }
}

/** Removes the entry `p` as the test's own cleanup (swapper stopped): a link is unlinked, never followed. */
function removeEntry(p: string) {
  let st;
  try {
    st = lstatSync(p);
  } catch {
    return;
  }
  if (st.isSymbolicLink() || !st.isDirectory()) unlinkSync(p);
  else rmSync(p, { recursive: true, force: true });
}

/** Count and checksum of the regular files below `dir` (names and contents). */
function fingerprint(dir: string): { files: number; sum: string } {
  const h = createHash("sha256");
  let files = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : 1))) {
      const p = path.join(d, e.name);
      h.update(p);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        files++;
        h.update(readFileSync(p));
      }
    }
  };
  walk(dir);
  return { files, sum: h.digest("hex") };
}

function fillOutside(dir: string) {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < OUTSIDE_FILES; i++) writeFileSync(path.join(dir, `outside-${i}`), `outside file ${i}\n`);
  mkdirSync(path.join(dir, "nested"), { recursive: true });
  for (let i = 0; i < 20; i++) writeFileSync(path.join(dir, "nested", `n-${i}`), `nested ${i}\n`);
}

interface Figures {
  case: string;
  attempts: number;
  outcomes: Record<string, number | string>;
  outsideTouched: number;
  ms: number;
  /** The first message seen per failing outcome. */
  samples?: Record<string, string>;
}

/** Counts one attempt's outcome (and keeps the first message of each failing one). */
function count(fig: Figures, outcome: string, error?: unknown) {
  fig.outcomes[outcome] = Number(fig.outcomes[outcome] ?? 0) + 1;
  if (error !== undefined) {
    fig.samples ??= {};
    fig.samples[outcome] ??= error instanceof Error ? error.message : JSON.stringify(error);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `call` with the swapper let loose at a random moment of it (at once for a third of the
 * attempts, else after 1..2×`typicalMs`), so the swap lands anywhere in the call, and some calls
 * finish before it.
 */
async function raced(swapper: Swapper, typicalMs: number, call: () => Promise<unknown>): Promise<{ outcome: string; error?: unknown; ms: number }> {
  const t0 = performance.now();
  const r = Math.random();
  if (r < 1 / 3) swapper.go();
  const result = call().then(
    () => ({ outcome: "OK" as string, error: undefined as unknown }),
    (error: unknown) => ({ outcome: outcomeOf(error), error }),
  );
  if (r >= 1 / 3) {
    await Promise.race([result, sleep(Math.max(1, Math.round(r * 2 * typicalMs)))]);
    swapper.go();
  }
  const done = await result;
  swapper.stop();
  return { ...done, ms: performance.now() - t0 };
}

const outcomeOf = (e: unknown) => (e instanceof CsiProxyError ? `code ${e.code}` : `thrown ${(e as Error)?.name ?? String(e)}`);
const report = (f: Figures) => process.stdout.write(`race-figures ${JSON.stringify(f)}\n`);

/** Mount entries from /proc/self/mountinfo: [device, mountPoint, fsType, source]. */
function mounts(): { dev: string; mountPoint: string; fsType: string; source: string }[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync("/proc/self/mountinfo", "utf8").split("\n").filter(Boolean).map((l) => {
    const f = l.split(" ");
    const sep = f.indexOf("-", 6);
    return { dev: f[2], mountPoint: unescape(f[4]), fsType: f[sep + 1], source: f[sep + 2] };
  });
}

/** Every outcome must be OK or a deliberate refusal: never Internal (13), Unknown (2) or an uncoded throw. */
function assertNoInternal(f: Figures) {
  const bad = Object.keys(f.outcomes).filter((o) => o === "code 13" || o === "code 2" || o.startsWith("thrown"));
  assert.deepEqual(bad, [], `${f.case}: unexpected outcomes ${JSON.stringify(f.samples ?? {})}`);
}

const within = (p: string, dir: string) => p === dir || p.startsWith(dir + "/");

describe("path operations raced against a symlink swap", { skip: skip ?? false }, () => {
  let root: string;
  let kubelet: string;
  let outside: string;
  let services: Services;
  const swappers: Swapper[] = [];

  before(async () => {
    root = mkdtempSync(path.join(tmpdir(), "csi-race-"));
    kubelet = path.join(root, "kubelet");
    outside = path.join(root, "outside");
    mkdirSync(kubelet);
    mkdirSync(outside);
    services = await createServices({
      platform: "linux", kubeletPath: kubelet, workingDirs: [], socketDir: path.join(root, "sockets"), requirePrivacy: true,
      defaultFsType: "ext4", stateDir: path.join(root, "state"), allowedServices: [],
    });
  });

  after(() => {
    for (const s of swappers) s.kill();
    for (const m of mounts().reverse()) if (within(m.mountPoint, root)) execFileSync("umount", ["-l", m.mountPoint]);
    rmSync(root, { recursive: true, force: true });
  });

  /**
   * Races `call` against a swap of `<base>/p` ↔ `<base>/p.link` (→ `<outsideDir>`), `attempts` times
   * (bounded by CASE_MS); `setup(p)` builds the real directory p; after each attempt the outside
   * directory's fingerprint must be unchanged.
   */
  async function raceFs(name: string, setup: (p: string) => void, call: (p: string) => Promise<unknown>, caseMs = CASE_MS): Promise<Figures> {
    const base = path.join(kubelet, name);
    const outsideDir = path.join(outside, name);
    fillOutside(outsideDir);
    const clean = fingerprint(outsideDir);
    mkdirSync(base, { recursive: true });
    const p = path.join(base, "p");
    const swapper = new Swapper(p);
    swappers.push(swapper);
    const figures: Figures = { case: name, attempts: 0, outcomes: {}, outsideTouched: 0, ms: 0 };
    const start = Date.now();
    let typical = 2;
    try {
      while (figures.attempts < FS_ATTEMPTS && Date.now() - start < caseMs) {
        for (const n of ["p", "p.real", "p.link"]) removeEntry(path.join(base, n));
        setup(p);
        symlinkSync(outsideDir, `${p}.link`);
        const r = await raced(swapper, typical, () => call(p));
        typical = typical * 0.9 + r.ms * 0.1;
        figures.attempts++;
        count(figures, r.outcome, r.error);
        const now = fingerprint(outsideDir);
        if (now.sum !== clean.sum) {
          figures.outsideTouched++;
          rmSync(outsideDir, { recursive: true, force: true });
          fillOutside(outsideDir);
        }
      }
    } finally {
      swapper.kill();
      figures.ms = Date.now() - start;
    }
    report(figures);
    assertNoInternal(figures);
    return figures;
  }

  /** A tree: files, and a subdirectory with files and a nested directory. */
  const tree = (p: string) => {
    mkdirSync(path.join(p, "d", "e"), { recursive: true });
    for (let i = 0; i < 8; i++) writeFileSync(path.join(p, `f${i}`), "x");
    for (let i = 0; i < 8; i++) writeFileSync(path.join(p, "d", `g${i}`), "y");
    writeFileSync(path.join(p, "d", "e", "h"), "z");
  };

  it("case 4: Rmdir(force) of a tree whose parent is swapped for a link deletes nothing outside", async () => {
    // The swapped name is the tree's parent: <base>/p/nested, and the outside dir has a "nested" too.
    const f = await raceFs("rmdir-force", (p) => {
      tree(path.join(p, "nested"));
    }, (p) => services.filesystem.rmdir({ path: path.join(p, "nested"), force: true }));
    assert.equal(f.outsideTouched, 0, `outside files deleted in ${f.outsideTouched} of ${f.attempts} attempts`);
    assert.ok(f.attempts >= 20, `too few attempts: ${f.attempts}`);
  });

  it("case 4: Rmdir(force) with a subdirectory inside the tree swapped for a link deletes nothing outside", async () => {
    const f = await raceFs("rmdir-force-inner", (p) => {
      tree(p);
    }, (p) => services.filesystem.rmdir({ path: path.dirname(p), force: true }).finally(() => mkdirSync(path.dirname(p), { recursive: true })));
    assert.equal(f.outsideTouched, 0, `outside files deleted in ${f.outsideTouched} of ${f.attempts} attempts`);
  });

  it("case 4: RmdirContents with a subdirectory swapped for a link deletes nothing outside", async () => {
    const f = await raceFs("rmdir-contents", (p) => {
      tree(p);
    }, (p) => services.filesystem.rmdirContents({ path: path.dirname(p) }));
    assert.equal(f.outsideTouched, 0, `outside files deleted in ${f.outsideTouched} of ${f.attempts} attempts`);
  });

  it("case 4: RmdirContents of a path whose parent is swapped for a link deletes nothing outside", async () => {
    const f = await raceFs("rmdir-contents-parent", (p) => {
      tree(path.join(p, "nested"));
    }, (p) => services.filesystem.rmdirContents({ path: path.join(p, "nested") }));
    assert.equal(f.outsideTouched, 0, `outside files deleted in ${f.outsideTouched} of ${f.attempts} attempts`);
  });

  it("CreateSymlink with the link's parent swapped for a link creates nothing outside", async () => {
    const source = path.join(kubelet, "symlink-source");
    mkdirSync(source, { recursive: true });
    const f = await raceFs("create-symlink", (p) => {
      mkdirSync(p);
    }, (p) => services.filesystem.createSymlink({ sourcePath: source, targetPath: path.join(p, "link") }));
    assert.equal(f.outsideTouched, 0, `a link was created outside in ${f.outsideTouched} of ${f.attempts} attempts`);
  });

  it("Mkdir below a parent swapped for a link creates nothing outside", async () => {
    const f = await raceFs("mkdir", (p) => {
      mkdirSync(p);
    }, (p) => services.filesystem.mkdir({ path: path.join(p, "new", "deeper") }), Math.round(CASE_MS * 0.6));
    assert.equal(f.outsideTouched, 0, `a directory was created outside in ${f.outsideTouched} of ${f.attempts} attempts`);
  });

  it("SMB local_path link (LinuxSmbHost.createDirLink) with the link's parent swapped for a link creates nothing outside", async () => {
    const host = new LinuxSmbHost({ stateDir: path.join(root, "state") });
    const f = await raceFs("smb-link", (p) => {
      mkdirSync(p);
    }, (p) => host.createDirLink(path.join(p, "link"), "\\\\server\\share\\dir"), Math.round(CASE_MS * 0.6));
    assert.equal(f.outsideTouched, 0, `a link was created outside in ${f.outsideTouched} of ${f.attempts} attempts`);
  });

  it("case 7: RmdirContents and Rmdir(force) never delete through a bind mount of an outside directory", async () => {
    const src = path.join(outside, "bind-source");
    fillOutside(src);
    const clean = fingerprint(src);
    const at = path.join(kubelet, "bind", "target");
    mkdirSync(at, { recursive: true });
    execFileSync("mount", ["--bind", src, at]);
    const nested = path.join(kubelet, "bind2", "holder", "inner");
    mkdirSync(nested, { recursive: true });
    writeFileSync(path.join(kubelet, "bind2", "holder", "own-file"), "mine");
    execFileSync("mount", ["--bind", src, nested]);
    const outcomes: Record<string, string> = {};
    const attempt = async (label: string, call: () => Promise<unknown>) => {
      try {
        await call();
        outcomes[label] = "OK";
      } catch (e) {
        outcomes[label] = outcomeOf(e);
      }
    };
    try {
      await attempt("RmdirContents(mount point)", () => services.filesystem.rmdirContents({ path: at }));
      await attempt("RmdirContents(inside mount point)", () => services.filesystem.rmdirContents({ path: path.join(at, "nested") }));
      await attempt("Rmdir force(inside mount point)", () => services.filesystem.rmdir({ path: path.join(at, "nested"), force: true }));
      await attempt("Mkdir(inside mount point)", () => services.filesystem.mkdir({ path: path.join(at, "new-dir") }));
      await attempt("CreateSymlink(inside mount point)", () => services.filesystem.createSymlink({ sourcePath: kubelet, targetPath: path.join(at, "new-link") }));
      await attempt("Rmdir force(mount point)", () => services.filesystem.rmdir({ path: at, force: true }));
      await attempt("Rmdir force(parent of mount point)", () => services.filesystem.rmdir({ path: path.dirname(at), force: true }));
      await attempt("RmdirContents(holds mount point)", () => services.filesystem.rmdirContents({ path: path.join(kubelet, "bind2") }));
      await attempt("Rmdir force(holds mount point)", () => services.filesystem.rmdir({ path: path.join(kubelet, "bind2"), force: true }));
      // The host alone (no path policy in front): the mount point itself is refused too.
      const host = new LinuxFilesystemHost();
      await attempt("host removeContents(mount point)", () => host.removeContents(at));
      await attempt("host removeAll(mount point)", () => host.removeAll(at));
    } finally {
      execFileSync("umount", [at]);
      execFileSync("umount", [nested]);
    }
    const now = fingerprint(src);
    report({ case: "bind-mount", attempts: Object.keys(outcomes).length, outcomes: Object.fromEntries(Object.entries(outcomes)), outsideTouched: now.sum === clean.sum ? 0 : 1, ms: 0 });
    assert.equal(now.files, clean.files, `outside files deleted: ${clean.files - now.files} (${JSON.stringify(outcomes)})`);
    assert.equal(now.sum, clean.sum);
    // Refused: PermissionDenied (7) where the path policy sees the bind source outside the allowed
    // dirs, FailedPrecondition (9) where the host meets the mount point (always, even without the policy).
    for (const [label, outcome] of Object.entries(outcomes)) assert.ok(outcome === "code 9" || outcome === "code 7", `${label}: ${outcome}`);
    assert.ok(!existsSync(path.join(src, "new-dir")) && !existsSync(path.join(src, "new-link")), "nothing created outside");
    assert.ok(existsSync(path.join(kubelet, "bind2", "holder", "own-file")), "nothing removed when refused up front");
  });

  describe("mount and unmount", () => {
    let loop: LoopDevice | undefined;
    let volumeId = "";
    let partDev = "";

    before(async () => {
      loop = createLoopDevice(root, 48 * 1024 * 1024, "race");
      await services.disk.partitionDisk({ diskNumber: loop.diskNumber });
      const ids = await services.volume.listVolumesOnDisk({ diskNumber: loop.diskNumber, partitionNumber: 0 });
      assert.equal(ids.volumeIds.length, 1);
      volumeId = ids.volumeIds[0];
      await services.volume.formatVolume({ volumeId });
      partDev = `${loop.device}p1`;
      assert.ok(existsSync(partDev), `${partDev} exists`);
    });

    after(() => loop?.cleanup());

    it("cases 5 and 6: MountVolume and UnmountVolume with a parent swapped for a link act only inside the kubelet dir", async () => {
      const base = path.join(kubelet, "mnt");
      const outsideDir = path.join(outside, "mnt");
      const foreign = path.join(outsideDir, "target");
      mkdirSync(foreign, { recursive: true });
      mkdirSync(base, { recursive: true });
      const mountForeign = () => execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "race-foreign", foreign]);
      mountForeign();
      const foreignMounted = () => mounts().some((m) => m.mountPoint === foreign && m.source === "race-foreign");
      const devNo = readFileSync(`/sys/class/block/${path.basename(partDev)}/dev`, "utf8").trim();
      const ours = () => mounts().filter((m) => m.dev === devNo);
      const p = path.join(base, "p");
      const target = path.join(p, "target");
      const swapper = new Swapper(p);
      swappers.push(swapper);
      const mountFig: Figures = { case: "mount-volume", attempts: 0, outcomes: {}, outsideTouched: 0, ms: 0 };
      const unmountFig: Figures = { case: "unmount-volume", attempts: 0, outcomes: {}, outsideTouched: 0, ms: 0 };
      /** Our volume mounted outside the kubelet dir, or the foreign tmpfs gone: count, then repair. */
      const checkOutside = (fig: Figures) => {
        let touched = false;
        for (const m of ours().reverse()) {
          if (!within(m.mountPoint, kubelet)) {
            touched = true;
            execFileSync("umount", [m.mountPoint]);
          }
        }
        if (!foreignMounted()) {
          touched = true;
          mountForeign();
        }
        if (touched) fig.outsideTouched++;
      };
      // The test's own set-up mounts through libc (no process per attempt; the swapper is stopped).
      const libc = await loadLibc();
      const reset = async (mounted: boolean) => {
        for (const m of ours().reverse()) await libc.umount2(m.mountPoint, 0);
        for (const n of ["p", "p.real", "p.link"]) removeEntry(path.join(base, n));
        mkdirSync(target, { recursive: true });
        symlinkSync(outsideDir, `${p}.link`);
        if (mounted) await libc.mount(partDev, target, "ext4", 0, null);
      };
      const start = Date.now();
      let typical = 5;
      try {
        while (mountFig.attempts < MOUNT_ATTEMPTS && Date.now() - start < 2 * CASE_MS) {
          for (const [fig, call] of [
            [mountFig, () => services.volume.mountVolume({ volumeId, targetPath: target })],
            [unmountFig, () => services.volume.unmountVolume({ volumeId, targetPath: target })],
          ] as const) {
            await reset(fig === unmountFig);
            const r = await raced(swapper, typical, call);
            typical = typical * 0.9 + r.ms * 0.1;
            fig.attempts++;
            count(fig, r.outcome, r.error);
            checkOutside(fig);
          }
        }
      } finally {
        swapper.kill();
        mountFig.ms = unmountFig.ms = Date.now() - start;
        for (const m of ours().reverse()) execFileSync("umount", [m.mountPoint]);
        if (foreignMounted()) execFileSync("umount", [foreign]);
      }
      report(mountFig);
      report(unmountFig);
      assertNoInternal(mountFig);
      assertNoInternal(unmountFig);
      assert.equal(mountFig.outsideTouched, 0, `volume mounted outside in ${mountFig.outsideTouched} of ${mountFig.attempts} attempts`);
      assert.equal(unmountFig.outsideTouched, 0, `foreign mount unmounted in ${unmountFig.outsideTouched} of ${unmountFig.attempts} attempts`);
      assert.ok(Number(mountFig.outcomes.OK ?? 0) > 0 && Number(unmountFig.outcomes.OK ?? 0) > 0, "some attempts must succeed");
    });
  });
});
