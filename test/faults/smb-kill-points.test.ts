// SMB global mappings under kill -9 and faults: the daemon killed before/after the mount of a new
// mapping and before/after the unmount of the last use; mount failing, hanging, or mounting and then
// hanging; the state directory full; a torn state file at start. After the restart the driver's
// retry must converge: one mount per share root while it has uses, none after the last release,
// reference counts neither lost nor doubled, no credentials file left behind, and files in the
// kubelet directory the calls do not name untouched. The CIFS mount is a tmpfs stand-in
// (fault-tools.ts), everything else is the real daemon. docs/reliability.md reports these figures.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { createFaultRig, codeOf, sha256, type FaultRig } from "../helpers/fault-rig.ts";
import type { FaultAction } from "../helpers/fault-tools.ts";
import { isRoot } from "../integration/smb-iscsi-system-fixtures.ts";

const canRun = isRoot && existsSync("/usr/bin/unshare");
const Code = { DeadlineExceeded: 4, NotFound: 5, FailedPrecondition: 9 };
const rows: string[] = [];
const PASSWORD = "kill-point-Pa55";

describe("SMB mappings: kill points and faults", { skip: !canRun && "needs root and unshare(1)" }, () => {
  let rig: FaultRig;
  let bystander: string;
  let bystanderSum: string;
  let n = 0;
  before(async () => {
    rig = await createFaultRig("smb-faults");
    // A file in the kubelet dir no call names.
    bystander = path.join(rig.kubelet, "bystander.bin");
    writeFileSync(bystander, Buffer.alloc(64 * 1024, 7));
    bystanderSum = sha256(bystander);
    await rig.start();
  });
  after(async () => {
    await rig?.close();
    if (rows.length) process.stdout.write(`# SMB figures\n${rows.map((r) => `# ${r}`).join("\n")}\n`);
  });

  const share = () => `\\\\srv${++n}\\vols`;
  const root = (remote: string) => remote.toLowerCase();
  const req = (remote: string, local: string) => ({ remotePath: `${remote}\\pvc`, localPath: local, username: "svc", password: PASSWORD });
  function uses(stateDir: string, remote: string): number {
    const file = rig.inNs(path.join(stateDir, "smb-mappings.json"));
    if (!existsSync(file)) return 0;
    return JSON.parse(readFileSync(file, "utf8")).roots[root(remote)]?.users.length ?? 0;
  }
  const smbMounts = (stateDir: string, remote: string) =>
    rig.mounts().filter((m) => m.mountPoint.startsWith(path.join(stateDir, "smb", "mounts")) && m.source.toLowerCase() === root(remote).replaceAll("\\", "/"));
  function assertClean(stateDir: string, remote: string, expectUses: number): void {
    assert.equal(uses(stateDir, remote), expectUses, "reference count");
    assert.equal(smbMounts(stateDir, remote).length, expectUses > 0 ? 1 : 0, "one mount while used, none after");
    const creds = rig.inNs(path.join(stateDir, "smb", "credentials"));
    assert.deepEqual(existsSync(creds) ? readdirSync(creds) : [], [], "no credentials file left behind");
    assert.equal(sha256(bystander), bystanderSum, "files the calls do not name are untouched");
  }
  const link = (name: string) => path.join(rig.kubelet, "plugins", `${name}-${n}`);

  for (const action of ["kill-before", "kill-after"] as FaultAction[]) {
    it(`NewSmbGlobalMapping: ${action} the mount; the retry maps once and counts one use`, async () => {
      const remote = share();
      const local = link("new");
      rig.faults.arm("mount", action, { pattern: "-t cifs" });
      const first = await (await rig.clients()).smb.newSmbGlobalMapping(req(remote, local)).then(() => null, (e: unknown) => e);
      assert.ok(first !== null && rig.faults.fired("mount"));
      if (action !== "kill-before") await rig.faults.waitDone();
      const restartMs = await rig.restartAfterKill();
      const afterRestart = { uses: uses(rig.stateDir, remote), mounts: smbMounts(rig.stateDir, remote).length };
      const c = await rig.clients();
      await c.smb.newSmbGlobalMapping(req(remote, local));
      await c.smb.newSmbGlobalMapping(req(remote, local)); // the driver retries once more: no double count
      assertClean(rig.stateDir, remote, 1);
      assert.equal(readlinkSync(local).startsWith(path.join(rig.stateDir, "smb", "mounts")), true);
      // release: the mapping goes with the last use
      rmSync(local);
      await c.smb.removeSmbGlobalMapping({ remotePath: `${remote}\\pvc` });
      assertClean(rig.stateDir, remote, 0);
      rows.push(`New mount ${action} | first answer ${codeOf(first)} | restart ${restartMs} ms | after restart: uses ${afterRestart.uses}, mounts ${afterRestart.mounts} | retry x2: uses 1, mounts 1 | release: uses 0, mounts 0 | no credentials left, bystander intact`);
    });
  }

  for (const action of ["kill-before", "kill-after"] as FaultAction[]) {
    it(`RemoveSmbGlobalMapping of the last use: ${action} the unmount; the restart finishes the removal, counts stay exact`, async () => {
      const remote = share();
      const a = link("a"), b = link("b");
      const c0 = await rig.clients();
      await c0.smb.newSmbGlobalMapping(req(remote, a));
      await c0.smb.newSmbGlobalMapping(req(remote, b));
      assert.equal(uses(rig.stateDir, remote), 2);
      rmSync(a);
      await c0.smb.removeSmbGlobalMapping({ remotePath: `${remote}\\pvc` });
      assertClean(rig.stateDir, remote, 1);
      rmSync(b);
      rig.faults.arm("umount", action);
      const first = await c0.smb.removeSmbGlobalMapping({ remotePath: `${remote}\\pvc` }).then(() => null, (e: unknown) => e);
      assert.ok(first !== null && rig.faults.fired("umount"));
      if (action !== "kill-before") await rig.faults.waitDone();
      const restartMs = await rig.restartAfterKill();
      // the start-up sweep finishes the interrupted removal; the driver's retry finds nothing left
      const retry = await (await rig.clients()).smb.removeSmbGlobalMapping({ remotePath: `${remote}\\pvc` }).then(() => "OK", (e: unknown) => codeOf(e));
      assert.ok(retry === Code.NotFound || retry === "OK", `retry answered ${retry}`);
      assertClean(rig.stateDir, remote, 0);
      rows.push(`Remove last use, umount ${action} | first answer ${codeOf(first)} | restart ${restartMs} ms | retry ${retry} | uses 0, mounts 0, bystander intact`);
    });
  }

  const faults: { action: FaultAction; code: number }[] = [
    { action: "fail", code: Code.FailedPrecondition },
    { action: "hang-after", code: Code.DeadlineExceeded },
  ];
  for (const f of faults) {
    it(`NewSmbGlobalMapping: mount ${f.action} → ${f.code}; nothing left mapped or counted; the retry maps`, async () => {
      const remote = share();
      const local = link(`fault-${f.action}`);
      const hang = f.action.startsWith("hang");
      const stateDir = hang ? rig.hangStateDir : rig.stateDir;
      const c = hang ? await rig.hangClients() : await rig.clients();
      rig.faults.arm("mount", f.action, { pattern: "-t cifs" });
      const t0 = Date.now();
      const first = await c.smb.newSmbGlobalMapping(req(remote, local)).then(() => null, (e: unknown) => e);
      const ms = Date.now() - t0;
      assert.ok(rig.faults.fired("mount"));
      assert.equal(codeOf(first), f.code, String(first));
      assertClean(stateDir, remote, 0);
      assert.equal(existsSync(local), false, "no link");
      await c.smb.newSmbGlobalMapping(req(remote, local));
      assertClean(stateDir, remote, 1);
      rmSync(local);
      await c.smb.removeSmbGlobalMapping({ remotePath: `${remote}\\pvc` });
      assertClean(stateDir, remote, 0);
      rows.push(`New mount ${f.action} | answer ${codeOf(first)} after ${ms} ms | uses 0, mounts 0, no link | retry: uses 1, mounts 1`);
    });
  }

  it("the state directory's filesystem is full: FailedPrecondition, nothing mapped or counted; space back → the retry maps", async () => {
    const remote = share();
    const local = link("full");
    const c = await rig.hangClients();
    const filler = rig.inNs(path.join(rig.hangStateDir, "filler"));
    // fill the 256 KiB tmpfs
    try {
      writeFileSync(filler, Buffer.alloc(1024 * 1024));
    } catch {
      // ENOSPC: full now
    }
    const first = await c.smb.newSmbGlobalMapping(req(remote, local)).then(() => null, (e: unknown) => e);
    assert.equal(codeOf(first), Code.FailedPrecondition, String(first));
    assert.equal(smbMounts(rig.hangStateDir, remote).length, 0);
    assert.equal(existsSync(local), false);
    rmSync(filler);
    await c.smb.newSmbGlobalMapping(req(remote, local));
    assertClean(rig.hangStateDir, remote, 1);
    rmSync(local);
    await c.smb.removeSmbGlobalMapping({ remotePath: `${remote}\\pvc` });
    assertClean(rig.hangStateDir, remote, 0);
    rows.push(`state dir full (256 KiB tmpfs) | answer ${codeOf(first)} | uses 0, mounts 0 | space back: retry maps, then releases`);
  });

  it("torn state files at start (SMB counts, disk offline marks): FailedPrecondition naming the file, nothing unmapped; removed → usable again", async () => {
    const remote = share();
    const local = link("torn");
    const c0 = await rig.clients();
    await c0.smb.newSmbGlobalMapping(req(remote, local));
    const file = path.join(rig.stateDir, "smb-mappings.json");
    const whole = readFileSync(file, "utf8");
    writeFileSync(file, whole.slice(0, Math.floor(whole.length / 2)));
    const marks = path.join(rig.socketDir, "csi-proxy-disk-state.json");
    writeFileSync(marks, '{"offline": [{"major": 7,');
    await rig.restart();
    const c = await rig.clients();
    const answers = [
      await c.smb.newSmbGlobalMapping(req(remote, link("torn2"))).then(() => "OK", (e: unknown) => codeOf(e)),
      await c.smb.removeSmbGlobalMapping({ remotePath: `${remote}\\pvc` }).then(() => "OK", (e: unknown) => codeOf(e)),
      await c.disk.getDiskState({ diskNumber: 7 << 20 }).then(() => "OK", (e: unknown) => codeOf(e)),
    ];
    assert.deepEqual(answers, [Code.FailedPrecondition, Code.FailedPrecondition, Code.FailedPrecondition]);
    assert.equal(smbMounts(rig.stateDir, remote).length, 1, "the mapping in use stays");
    rmSync(file);
    rmSync(marks);
    await rig.restart();
    const c2 = await rig.clients();
    await c2.smb.newSmbGlobalMapping(req(remote, local)); // the link is there: counted afresh as one use
    assertClean(rig.stateDir, remote, 1);
    rows.push(`torn smb-mappings.json and disk offline-state file | answers ${answers.join(", ")} | mapping kept | files removed: counting restarts at 1 use`);
  });
});
