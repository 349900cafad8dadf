/**
 * Injection proofs (CVE-2023-3893 class) and secret handling for the Windows SMB, iSCSI and System
 * hosts. Their worker ops run in their own pool with their own constant script
 * (src/host/windows/powershell/scripts/worker-ops-smb-iscsi-system.ts). The fake worker records what it receives; for every op:
 *   - every worker ran that constant script, byte for byte (decoded from -EncodedCommand);
 *   - the request line is pure ASCII JSON whose `op` is the operation's constant op name;
 *   - hostile strings in every string field round-trip exactly (JSON.parse of the recorded line);
 * and for the secrets (SMB password, CHAP secret, mutual CHAP secret): they appear in the stdin
 * request line of their one op and nowhere else — not in any other request, not in the workers'
 * argv or environment, not in the pool's log, not in error messages.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { SECRET_FIELDS, SMB_ISCSI_SYSTEM_OPS, SMB_ISCSI_SYSTEM_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-ops-smb-iscsi-system.ts";
import { WORKER_OPS, WORKER_SCRIPT } from "../../src/host/windows/powershell/scripts/worker-script.ts";
import { WindowsSmbHost, type SmbWin32 } from "../../src/host/windows/smb.ts";
import { WindowsIscsiHost } from "../../src/host/windows/iscsi.ts";
import { WindowsSystemHost } from "../../src/host/windows/system.ts";
import type { ScmServiceInfo, ServiceControlManager } from "../../src/win32-service/scm.ts";
import { createRefCountedSmb } from "../helpers/ref-counted-smb.ts";
import { createIscsiService } from "../../src/groups/iscsi/iscsi-service.ts";
import { createSystemService } from "../../src/groups/system/system-service.ts";
import type { JsonStateFile } from "../../src/state/atomic-file.ts";
import type { SmbState } from "../../src/groups/smb/smb-state.ts";
import type { PathPolicy } from "../../src/policy/path-policy.ts";
import { Code, CsiProxyError } from "../../src/errors.ts";
import { createFakePool } from "./fake-pool.ts";
import { HOSTILE, requestRecorder, testHostileStringsReachWorkerAsData, type WorkerOperation } from "./injection-harness.ts";

const logLines: string[] = [];
const fake = createFakePool(
  {
    "smb.getMapping": { result: [] },
    "smb.listMappings": { result: [] },
    "smb.testPath": { result: true },
    "iscsi.listPortals": { result: [] },
    "iscsi.discover": { result: [] },
    "iscsi.getTarget": { result: { nodeAddress: "iqn.2000-01.com.example:t", connected: false } },
    "iscsi.disks": { result: [] },
    "system.biosSerial": { result: { serialNumber: "x" } },
  },
  { size: 2, script: SMB_ISCSI_SYSTEM_SCRIPT, ops: SMB_ISCSI_SYSTEM_OPS, log: (m) => logLines.push(m) },
);
after(() => fake.close());

/** Runs `fn` and returns the requests it added (after checking the script and the ASCII wire). */
const sent = requestRecorder(fake, SMB_ISCSI_SYSTEM_SCRIPT, "the constant SMB/iSCSI/System script");

const links: [string, string, number][] = [];
const win32: SmbWin32 = { createSymbolicLink: (l, t, f) => void links.push([l, t, f]) };
const smb = new WindowsSmbHost(fake.pool, win32);
const iscsi = new WindowsIscsiHost(fake.pool);
const noScm = {} as ServiceControlManager;
const system = new WindowsSystemHost(fake.pool, noScm);
const portal = (s: string) => ({ targetAddress: s, targetPort: 3260 });

/** Every worker op of the SMB/iSCSI/System hosts: how to call it with `s` in each string field, and the args expected on the wire. */
const operations: WorkerOperation[] = [
  { name: "smb.getMapping", op: "smb.getMapping", call: (s) => smb.getMapping(s), args: (s) => ({ remotePath: s }) },
  { name: "smb.getMappings", op: "smb.listMappings", call: (s) => smb.getMappings([s]), args: () => ({}) },
  {
    name: "smb.createMapping",
    op: "smb.newMapping",
    call: (s) => smb.createMapping(s, s, s, true),
    args: (s) => ({ remotePath: s, username: s, password: s, requirePrivacy: true }),
  },
  { name: "smb.removeMapping", op: "smb.removeMapping", call: (s) => smb.removeMapping(s), args: (s) => ({ remotePath: s }) },
  { name: "smb.isPathValid", op: "smb.testPath", call: (s) => smb.isPathValid(s), args: (s) => ({ path: s }) },
  { name: "iscsi.listTargetPortals", op: "iscsi.listPortals", call: () => iscsi.listTargetPortals(), args: () => ({}) },
  { name: "iscsi.addTargetPortal", op: "iscsi.addPortal", call: (s) => iscsi.addTargetPortal(portal(s)), args: (s) => ({ address: s, port: 3260 }) },
  { name: "iscsi.removeTargetPortal", op: "iscsi.removePortal", call: (s) => iscsi.removeTargetPortal(portal(s)), args: (s) => ({ address: s, port: 3260 }) },
  { name: "iscsi.discoverTargets", op: "iscsi.discover", call: (s) => iscsi.discoverTargets(portal(s)), args: (s) => ({ address: s, port: 3260 }) },
  { name: "iscsi.getTarget", op: "iscsi.getTarget", call: (s) => iscsi.getTarget(portal(s), s), args: (s) => ({ address: s, port: 3260, iqn: s }) },
  {
    name: "iscsi.connectTarget",
    op: "iscsi.connect",
    call: (s) => iscsi.connectTarget(portal(s), s, { type: "MUTUAL_CHAP", chapUsername: s, chapSecret: s }),
    args: (s) => ({ address: s, port: 3260, iqn: s, authType: "MUTUALCHAP", chapUsername: s, chapSecret: s }),
  },
  { name: "iscsi.disconnectTarget", op: "iscsi.disconnect", call: (s) => iscsi.disconnectTarget(portal(s), s), args: (s) => ({ address: s, port: 3260, iqn: s }) },
  { name: "iscsi.getTargetDisks", op: "iscsi.disks", call: (s) => iscsi.getTargetDisks(portal(s), s), args: (s) => ({ address: s, port: 3260, iqn: s }) },
  { name: "iscsi.setMutualChapSecret", op: "iscsi.setMutualChapSecret", call: (s) => iscsi.setMutualChapSecret(s), args: (s) => ({ secret: s }) },
  { name: "system.getBIOSSerialNumber", op: "system.biosSerial", call: () => system.getBIOSSerialNumber(), args: () => ({}) },
];

testHostileStringsReachWorkerAsData(operations, sent);

test("every op of the SMB/iSCSI/System script is covered above, and the script defines each one", () => {
  assert.deepEqual(new Set(operations.map((o) => o.op)), new Set(SMB_ISCSI_SYSTEM_OPS.filter((op) => op !== "ping")));
  for (const op of SMB_ISCSI_SYSTEM_OPS) assert.ok(SMB_ISCSI_SYSTEM_SCRIPT.includes(`'${op}' = {`), `the script defines ${op}`);
  // the storage script's ops are covered by injection.test.ts; no op is defined by both scripts but `ping`
  assert.deepEqual(SMB_ISCSI_SYSTEM_OPS.filter((op) => (WORKER_OPS as readonly string[]).includes(op)), ["ping"]);
  // the storage script does not define these ops (their pool refuses them before sending)
  for (const op of SMB_ISCSI_SYSTEM_OPS) if (op !== "ping") assert.ok(!WORKER_SCRIPT.includes(`'${op}'`), op);
});

test("the storage pool refuses the SMB/iSCSI/System ops before anything is sent, and vice versa", async () => {
  const storage = createFakePool({}, { size: 1 });
  try {
    const err = await storage.pool.call("smb.newMapping", { password: "never-sent" }).catch((e) => e);
    assert.equal((err as CsiProxyError).code, Code.Internal);
    assert.equal(storage.recorded().raw.length, 0);
  } finally {
    await storage.close();
  }
  const err = await fake.pool.call("disk.list", {}).catch((e) => e);
  assert.equal((err as CsiProxyError).code, Code.Internal);
});

test("the SMB/iSCSI/System script never turns data into code (static check)", () => {
  const script = SMB_ISCSI_SYSTEM_SCRIPT;
  for (const banned of [/Invoke-Expression/i, /\biex\b/i, /ScriptBlock\]::Create/i, /\$ExecutionContext\.(?!SessionState\.LanguageMode\b)/i, /-Filter\b/i, /-Query\b/i, /\bAdd-Type\b/i, /\bStart-Process\b/i, /\bcmd(\.exe)?\b/i, /"[^"]*\$a\./, /ConvertTo-SecureString/i, /New-Object\s+System\.Management\.Automation\.PSCredential/i]) {
    assert.doesNotMatch(script, banned);
  }
  // the wildcard-capable -RemotePath query parameter of the SMB cmdlets is never used
  assert.doesNotMatch(script, /(Get|Remove)-SmbGlobalMapping[^\n]*-RemotePath/);
  // request data is only read as $a.<field> and cast, compared or put into a method's argument table
  const uses = script.match(/\$a\.\w+/g) ?? [];
  assert.deepEqual([...new Set(uses)].sort(), [
    "$a.address", "$a.authType", "$a.chapSecret", "$a.chapUsername", "$a.echo", "$a.iqn", "$a.password", "$a.path", "$a.port", "$a.remotePath", "$a.requirePrivacy", "$a.secret", "$a.username",
  ]);
  // each secret field is read exactly once, where it is consumed
  assert.equal(script.split("$a.password").length - 1, 1);
  assert.equal(script.split("$a.chapSecret").length - 1, 2); // the emptiness test and the argument table
  assert.equal(script.split("$a.secret").length - 1, 1);
  assert.ok(!script.includes("${"), "no JavaScript interpolation in the constant");
  let depth = { "(": 0, "{": 0, "[": 0 } as Record<string, number>;
  const close: Record<string, string> = { ")": "(", "}": "{", "]": "[" };
  for (let i = 0; i < script.length; i++) {
    const c = script[i];
    if (c === "'") {
      i = script.indexOf("'", i + 1);
      assert.ok(i > 0, "unterminated single-quoted string");
    } else if (c === '"') {
      i = script.indexOf('"', i + 1);
      assert.ok(i > 0, "unterminated double-quoted string");
    } else if (c === "#") {
      i = script.indexOf("\n", i);
    } else if (c in depth) depth[c]++;
    else if (c in close) {
      depth[close[c]]--;
      assert.ok(depth[close[c]] >= 0, `unbalanced ${c} at ${i}: ${script.slice(Math.max(0, i - 60), i + 1)}`);
    }
  }
  assert.deepEqual(depth, { "(": 0, "{": 0, "[": 0 });
});

// ---- secrets --------------------------------------------------------------------------------

const SECRETS = { password: "Smb-P4ss-9f3e1c7a!", chap: "ChapSecret-0123", mutual: "MutualSecret-77" };

test("secrets reach only the stdin request of their one op: never argv, env, another request, or the pool's log", async () => {
  const before = fake.recorded().raw.length;
  await smb.createMapping("\\\\srv\\share", "DOMAIN\\user", SECRETS.password, true);
  await smb.getMapping("\\\\srv\\share");
  await iscsi.connectTarget(portal("10.0.0.5"), "iqn.2000-01.com.example:t", { type: "MUTUAL_CHAP", chapUsername: "initiator", chapSecret: SECRETS.chap });
  await iscsi.setMutualChapSecret(SECRETS.mutual);
  await iscsi.listTargetPortals();
  const rec = fake.recorded();
  const lines = rec.raw.slice(before);
  const reqs = rec.requests.slice(before);
  const carriers: Record<string, string> = { [SECRETS.password]: "smb.newMapping", [SECRETS.chap]: "iscsi.connect", [SECRETS.mutual]: "iscsi.setMutualChapSecret" };
  for (const [secret, op] of Object.entries(carriers)) {
    const holding = lines.map((l, i) => (l.includes(secret) ? reqs[i].op : null)).filter(Boolean);
    assert.deepEqual(holding, [op], `${op}'s secret is in its own request line only`);
    const req = reqs.find((r) => r.op === op)!;
    assert.deepEqual(
      Object.entries(req.args).filter(([, v]) => v === secret).map(([k]) => k),
      [...SECRET_FIELDS[op]],
      "and only in the field declared secret",
    );
    for (const start of rec.starts) {
      assert.ok(!start.argv.some((a) => a.includes(secret)), "not in the worker's argv");
      assert.ok(!Object.entries(start.env).some(([k, v]) => k.includes(secret) || String(v).includes(secret)), "not in the worker's environment");
      assert.ok(!(start.script ?? "").includes(secret));
    }
    assert.ok(!logLines.some((l) => l.includes(secret)), "not in the pool's log");
    assert.ok(!JSON.stringify(fake.workerArgs).includes(secret));
  }
});

test("a worker error that echoes a secret reaches the caller with the secret removed, and without it as cause", async () => {
  const echo = (s: string) => ({ error: { message: `Cannot bind argument '${s}'`, category: "InvalidArgument", fqid: "ParameterBindingFailed" } });
  const p = createFakePool(
    { "smb.newMapping": echo(SECRETS.password), "iscsi.connect": echo(SECRETS.chap), "iscsi.setMutualChapSecret": echo(SECRETS.mutual) },
    { size: 1, script: SMB_ISCSI_SYSTEM_SCRIPT, ops: SMB_ISCSI_SYSTEM_OPS },
  );
  try {
    const errs = [
      await new WindowsSmbHost(p.pool, win32).createMapping("\\\\srv\\share", "u", SECRETS.password, false).catch((e) => e),
      await new WindowsIscsiHost(p.pool).connectTarget(portal("h"), "iqn.2000-01.com.example:t", { type: "ONE_WAY_CHAP", chapUsername: "", chapSecret: SECRETS.chap }).catch((e) => e),
      await new WindowsIscsiHost(p.pool).setMutualChapSecret(SECRETS.mutual).catch((e) => e),
    ];
    for (const err of errs) {
      assert.ok(err instanceof CsiProxyError);
      assert.equal(err.code, Code.InvalidArgument);
      assert.match(err.message, /Cannot bind argument '\*\*\*'/);
      for (const s of Object.values(SECRETS)) {
        assert.ok(!err.message.includes(s));
        assert.ok(!JSON.stringify(err.cause ?? null).includes(s));
        assert.equal(err.cause, undefined);
      }
    }
  } finally {
    await p.close();
  }
});

// ---- through the services -------------------------------------------------------------------

function memoryState(): JsonStateFile<SmbState> {
  let v: SmbState | null = null;
  return { path: "mem", load: async () => v, save: async (x) => void (v = structuredClone(x)) };
}
const allowAll: PathPolicy = { check: async (p: string) => p } as unknown as PathPolicy;

test("SMB and iSCSI service RPCs: hostile passwords, CHAP values and paths reach the worker verbatim as data", async () => {
  const svc = await createRefCountedSmb({ host: smb, policy: allowAll, state: memoryState(), requirePrivacy: true, platform: "win32", sweepIntervalMs: 0 });
  const isvc = createIscsiService({ host: iscsi });
  // what the services let through: no NUL/CR/LF in passwords, no control characters in CHAP values
  const passable = HOSTILE.filter((s) => !/[\x00-\x1f\x7f]/.test(s) && s.length < 1000);
  for (const s of passable) {
    const reqs = await sent(async () => {
      await svc.newSmbGlobalMapping({ remotePath: "\\\\srv\\share\\sub", localPath: "", username: "user", password: s });
      await isvc.connectTarget({ targetPortal: { targetAddress: "10.0.0.5", targetPort: 0 }, iqn: "iqn.2000-01.com.example:t", authType: "ONE_WAY_CHAP", chapUsername: s.slice(0, 200), chapSecret: s.slice(0, 200) }).catch((e) => {
        if ((e as CsiProxyError).code !== Code.InvalidArgument) throw e; // CHAP values with surrounding blanks are refused before the host
      });
      await isvc.setMutualChapSecret({ mutualChapSecret: s.slice(0, 200) }).catch((e) => {
        if ((e as CsiProxyError).code !== Code.InvalidArgument) throw e;
      });
    });
    const create = reqs.find((r) => r.op === "smb.newMapping")!;
    assert.deepEqual(create.args, { remotePath: "\\\\srv\\share", username: "user", password: s, requirePrivacy: true });
    for (const r of reqs.filter((r) => r.op === "iscsi.connect")) {
      assert.equal(r.args.chapSecret, s.slice(0, 200));
      assert.equal(r.args.port, 3260, "port 0 means 3260");
    }
    for (const r of reqs.filter((r) => r.op === "iscsi.setMutualChapSecret")) assert.equal(r.args.secret, s.slice(0, 200));
  }
  svc.close();
});

test("System service: hostile service names never reach the SCM unvalidated, valid ones reach it verbatim", async () => {
  const seen: string[] = [];
  const scm: ServiceControlManager = {
    query: (name): ScmServiceInfo => (seen.push(name), { name, displayName: name, startType: 3, state: 1, group: "", dependencies: [] }),
    start: (name) => void seen.push(`start ${name}`),
    stop: (name) => void seen.push(`stop ${name}`),
    dependents: () => [],
  };
  const svc = createSystemService({ host: new WindowsSystemHost(fake.pool, scm), platform: "win32", allowedServices: ["*"], pollIntervalMs: 1, waitTimeoutMs: 5 });
  for (const s of HOSTILE) {
    seen.length = 0;
    const r = await svc.getService({ name: s }).catch((e) => e as CsiProxyError);
    if (r instanceof CsiProxyError) {
      assert.equal(r.code, Code.InvalidArgument, JSON.stringify(s.slice(0, 40)));
      assert.deepEqual(seen, [], "an invalid name reaches nothing");
    } else {
      assert.deepEqual(seen, [s], "a valid name reaches the SCM verbatim");
    }
  }
});
