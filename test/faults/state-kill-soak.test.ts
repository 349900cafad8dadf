// kill -9 at random moments of the calls that change the state directory — SetMutualChapSecret,
// NewSmbGlobalMapping, RemoveSmbGlobalMapping — then a restart: whatever the kill interrupted, the
// restarted daemon must leave no temporary copy of a state file (`iscsi/.mutual-chap-secret.tmp-*`
// holds a full secret; `.smb-mappings.json.tmp-*`), no directory in `smb/mounts` that no recorded
// share root uses, and consistent state: the mutual CHAP secret absent or one that was sent, every
// recorded SMB use with its link, one mount per used root and none for others; after every use is
// released nothing is left. The calls run back to back and the kill comes after a random delay
// drawn from the same run's measured call time, so it lands at a random point of some call whatever
// the machine's speed. Real daemon in a private mount namespace (test/helpers/fault-rig.ts; the CIFS
// mount is a tmpfs stand-in). Kills per call: STATE_KILLS (default 10; the soak of
// docs/reliability.md: STATE_KILLS=50). Figures: "state-kill-figures {json}" lines.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import * as path from "node:path";
import { connectGroup } from "../../src/client/connect-group.ts";
import { isTempFileOf } from "../../src/state/atomic-file.ts";
import { createFaultRig, type FaultRig } from "../helpers/fault-rig.ts";
import { isRoot } from "../integration/smb-iscsi-system-fixtures.ts";

const KILLS = Number(process.env.STATE_KILLS ?? 10);
const canRun = isRoot && existsSync("/usr/bin/unshare");
const PASSWORD = "soak-Pa55";
/** What a step answers when it had no call left to make (not counted as an answered call). */
const IDLE = Symbol("idle");

interface Figures {
  call: string;
  kills: number;
  /** Kills after which a temporary state file was there before the restart (then swept). */
  tmpLeftByKill: number;
  /** Kills after which an unused mapping directory was there before the restart (then swept). */
  dirsLeftByKill: number;
  /** After the restarts: temporary files, unused directories, inconsistencies (all must be 0). */
  tmpAfterRestart: number;
  dirsAfterRestart: number;
  inconsistent: number;
  callsAnswered: number;
  restartMsMax: number;
  firstProblem?: string;
}

describe("kill -9 at random points of state-changing calls, then a restart", { skip: !canRun && "needs root and unshare(1)" }, () => {
  let rig: FaultRig;
  let n = 0;
  const sentSecrets = new Set<string>();
  const all: Figures[] = [];
  before(async () => {
    rig = await createFaultRig("state-kill");
    await rig.start();
  });
  after(async () => {
    await rig?.close();
    for (const f of all) process.stdout.write(`state-kill-figures ${JSON.stringify(f)}\n`);
  });

  const st = (...p: string[]) => rig.inNs(path.join(rig.stateDir, ...p));
  const list = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);
  const tmpFiles = () => [
    ...list(st()).filter((e) => isTempFileOf(e, "smb-mappings.json")),
    ...list(st("iscsi")).filter((e) => isTempFileOf(e, "mutual-chap-secret")).map((e) => `iscsi/${e}`),
  ];
  const smbState = (): { roots: Record<string, { users: { localPath?: string }[]; removing?: boolean }> } =>
    existsSync(st("smb-mappings.json")) ? JSON.parse(readFileSync(st("smb-mappings.json"), "utf8")) : { roots: {} };
  const mountsDir = () => path.join(rig.stateDir, "smb", "mounts");
  const smbMounts = () => rig.mounts().filter((m) => path.dirname(m.mountPoint) === mountsDir());
  /** Directories in smb/mounts with nothing mounted on them. */
  const unusedDirs = () => {
    const mounted = new Set(smbMounts().map((m) => path.basename(m.mountPoint)));
    return list(st("smb", "mounts")).filter((e) => !mounted.has(e));
  };

  /** What is wrong with the state now, or null. */
  function problems(): string | null {
    const tmp = tmpFiles();
    if (tmp.length) return `temporary files left: ${tmp.join(", ")}`;
    const unused = unusedDirs();
    if (unused.length) return `unused mapping directories left: ${unused.join(", ")}`;
    if (existsSync(st("iscsi", "mutual-chap-secret"))) {
      const secret = readFileSync(st("iscsi", "mutual-chap-secret"), "utf8");
      if (!sentSecrets.has(secret)) return `mutual CHAP secret ${JSON.stringify(secret)} was never sent`;
    }
    const roots = smbState().roots;
    const mounts = smbMounts();
    for (const [root, rs] of Object.entries(roots)) {
      if (rs.removing) return `${root}: removal still owed after the restart`;
      if (rs.users.length === 0) return `${root}: recorded without uses`;
      const m = mounts.filter((x) => x.source.toLowerCase() === root.replaceAll("\\", "/"));
      if (m.length !== 1) return `${root}: ${m.length} mounts for ${rs.users.length} use(s)`;
      for (const u of rs.users) {
        if (u.localPath === undefined) continue;
        let target = "";
        try {
          target = readlinkSync(u.localPath);
        } catch {}
        if (!target.startsWith(m[0].mountPoint)) return `${root}: the use at ${u.localPath} has no link into its mount (${target || "none"})`;
      }
    }
    for (const m of mounts) {
      if (!Object.keys(roots).some((r) => r.replaceAll("\\", "/") === m.source.toLowerCase())) return `mount ${m.mountPoint} (${m.source}) belongs to no recorded root`;
    }
    return null;
  }

  const share = () => `\\\\soak${++n}\\vols`;
  const link = () => path.join(rig.kubelet, "plugins", `soak-${n}`);
  const newReq = (remote: string, local: string) => ({ remotePath: `${remote}\\pvc`, localPath: local, username: "svc", password: PASSWORD });

  async function clients() {
    const c = await rig.clients();
    const iscsi = await connectGroup("iscsi", { socketDir: rig.socketDir, versions: ["v1alpha2"] });
    return {
      smb: c.smb,
      iscsi: iscsi.client as unknown as { setMutualChapSecret(r: { MutualChapSecret: string }): Promise<unknown> },
      close: () => {
        iscsi.close();
        c.close();
      },
    };
  }
  type Clients = Awaited<ReturnType<typeof clients>>;

  /** Mean duration of `call` over `times` runs (ms), at least 1. */
  async function meanMs(times: number, call: () => Promise<unknown>): Promise<number> {
    const t0 = performance.now();
    for (let i = 0; i < times; i++) await call();
    return Math.max(1, (performance.now() - t0) / times);
  }

  /**
   * Runs `step` back to back until the daemon dies; kills it `delayMs` after the first step began;
   * then inspects what the kill left, restarts, and checks the state.
   */
  async function killRound(fig: Figures, c: Clients, delayMs: number, step: (c: Clients) => Promise<unknown>): Promise<void> {
    let dead = false;
    const loop = (async () => {
      while (!dead) {
        const ok = await step(c).then((r) => r !== IDLE, () => false);
        if (ok) fig.callsAnswered++;
      }
    })();
    await new Promise((r) => setTimeout(r, delayMs));
    rig.kill9();
    dead = true;
    await loop;
    c.close();
    // what the kill left, seen before the restart (the daemon is gone: nothing changes now)
    if (tmpFiles().length) fig.tmpLeftByKill++;
    if (unusedDirs().length) fig.dirsLeftByKill++;
    fig.restartMsMax = Math.max(fig.restartMsMax, await rig.restartAfterKill());
    fig.kills++;
    if (tmpFiles().length) fig.tmpAfterRestart++;
    if (unusedDirs().length) fig.dirsAfterRestart++;
    const p = problems();
    if (p !== null) {
      fig.inconsistent++;
      fig.firstProblem ??= p;
    }
  }

  const newFigures = (call: string): Figures => ({ call, kills: 0, tmpLeftByKill: 0, dirsLeftByKill: 0, tmpAfterRestart: 0, dirsAfterRestart: 0, inconsistent: 0, callsAnswered: 0, restartMsMax: 0 });
  function assertClean(f: Figures): void {
    all.push(f);
    assert.equal(f.kills, KILLS);
    assert.equal(f.tmpAfterRestart, 0, `temporary state files survived a restart: ${f.firstProblem}`);
    assert.equal(f.dirsAfterRestart, 0, `unused mapping directories survived a restart: ${f.firstProblem}`);
    assert.equal(f.inconsistent, 0, `state inconsistent after a restart: ${f.firstProblem}`);
  }

  it(`SetMutualChapSecret: ${KILLS} kills`, async () => {
    const fig = newFigures("SetMutualChapSecret");
    let k = 0;
    // every fifth call removes the secret (an empty one), the others write a new one
    const step = (c: Clients) => {
      const secret = ++k % 5 === 0 ? "" : `mutual-secret-${k}-0123456789`;
      if (secret !== "") sentSecrets.add(secret);
      return c.iscsi.setMutualChapSecret({ MutualChapSecret: secret });
    };
    const warm = await clients();
    const mean = await meanMs(5, () => step(warm));
    warm.close();
    for (let i = 0; i < KILLS; i++) await killRound(fig, await clients(), Math.random() * 10 * mean, step);
    assertClean(fig);
  });

  it(`NewSmbGlobalMapping: ${KILLS} kills`, async () => {
    const fig = newFigures("NewSmbGlobalMapping");
    const step = (c: Clients) => {
      const remote = share();
      return c.smb.newSmbGlobalMapping(newReq(remote, link()));
    };
    const warm = await clients();
    const mean = await meanMs(3, () => step(warm));
    warm.close();
    for (let i = 0; i < KILLS; i++) await killRound(fig, await clients(), Math.random() * 4 * mean, step);
    assertClean(fig);
  });

  it(`RemoveSmbGlobalMapping: ${KILLS} kills`, async () => {
    const fig = newFigures("RemoveSmbGlobalMapping");
    const USES = 4;
    let mean = 0;
    for (let i = 0; i < KILLS + 1; i++) {
      const c = await clients();
      const remotes: string[] = [];
      for (let j = 0; j < USES; j++) {
        remotes.push(share());
        await c.smb.newSmbGlobalMapping(newReq(remotes[j], link()));
      }
      let next = 0;
      const step = (x: Clients) => (next < remotes.length ? x.smb.removeSmbGlobalMapping({ remotePath: `${remotes[next++]}\\pvc` }) : new Promise((r) => setTimeout(() => r(IDLE), 5)));
      if (i === 0) {
        mean = await meanMs(USES, () => step(c)); // the first round measures; its mappings are all removed
        c.close();
        continue;
      }
      await killRound(fig, c, Math.random() * USES * mean, step);
    }
    assertClean(fig);
  });

  it("after all uses are released, nothing is left", async () => {
    const c = await clients();
    for (const [root, rs] of Object.entries(smbState().roots)) {
      for (let i = 0; i < rs.users.length; i++) await c.smb.removeSmbGlobalMapping({ remotePath: `${root}\\pvc` });
    }
    await c.iscsi.setMutualChapSecret({ MutualChapSecret: "" });
    c.close();
    assert.deepEqual(smbState().roots, {});
    assert.deepEqual(smbMounts(), []);
    assert.deepEqual(list(st("smb", "mounts")), []);
    assert.deepEqual(tmpFiles(), []);
    assert.equal(existsSync(st("iscsi", "mutual-chap-secret")), false);
  });
});
