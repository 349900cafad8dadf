/**
 * -windows-service under Wine's Service Control Manager: `sc create` / `sc start` → RUNNING and
 * serving all pipes, `sc interrogate` answered, `sc stop` → STOPPED with the pipes closed and the
 * log file (no console) complete. Also: `-windows-service` from a console fails clearly.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { clientReport, runSc, runWine, wineSuite } from "./wine-harness.ts";

const { w, skip } = await wineSuite("service", {
  keepAlive: true, // Wine ends service processes when its last ordinary process exits
  async before(w) {
    // a service left registered by an interrupted run
    await runSc(w, ["delete", "csiproxy"]).catch(() => {});
  },
  async after(w) {
    await runSc(w, ["delete", "csiproxy"]).catch(() => {});
  },
});

async function queryState(): Promise<string> {
  const r = await runSc(w, ["query", "csiproxy"]);
  return /STATE\s*:\s*\d+\s+(\w+)/.exec(r.stdout)?.[1] ?? `unknown: ${r.stdout}`;
}

async function waitState(state: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    last = await queryState();
    if (last === state) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`service did not reach ${state} (last: ${last})`);
}

test("sc create/start/interrogate/stop: serves while RUNNING, stops serving cleanly, logs to -log_file", { skip }, async () => {
  const logLinux = path.join(w.work.linux, "csi-proxy.log");
  fs.rmSync(logLinux, { force: true });
  const logWin = `${w.work.win}\\csi-proxy.log`;
  const binPath = `${w.exeWin} -windows-service -log_file=${logWin} -logtostderr=false -v=2 -kubelet-path=${w.work.win}\\kubelet`;
  const created = await runSc(w, ["create", "csiproxy", "binPath=", binPath]);
  assert.equal(created.code, 0, `sc create: ${created.stdout}`);
  const started = await runSc(w, ["start", "csiproxy"]);
  assert.equal(started.code, 0, started.stdout);
  await waitState("RUNNING");

  const pipes = await clientReport(w, "pipes");
  assert.equal(Object.keys(pipes.results).length, 23);
  assert.ok(Object.values(pipes.results).every(Boolean), `every pipe is served: ${JSON.stringify(pipes.results)}`);
  fs.mkdirSync(path.join(w.work.linux, "kubelet", "svc"), { recursive: true });
  const auth = await clientReport(w, "authority", { path: `${w.work.win}\\kubelet\\svc` });
  assert.equal(auth.raw.exists, true, JSON.stringify(auth));

  // Wine's sc.exe has no "control"/"interrogate": the client sends ControlService(INTERROGATE).
  const interrogated = await clientReport(w, "interrogate", { koffiDir: w.koffiDirWin, service: "csiproxy" });
  assert.deepEqual(interrogated, { ok: true, error: 0, state: 4 /* RUNNING */, accepted: 0x1 | 0x4 /* STOP | SHUTDOWN */ });

  const stopped = await runSc(w, ["stop", "csiproxy"]);
  assert.equal(stopped.code, 0, stopped.stdout);
  await waitState("STOPPED");
  const after = await clientReport(w, "pipes");
  assert.ok(Object.values(after.results).every((v) => v === false), `no pipe is served after stop: ${JSON.stringify(after.results)}`);

  const log = fs.readFileSync(logLinux, "utf8");
  assert.match(log, /Log file created at:/);
  assert.match(log, /Starting CSI-Proxy Server/);
  assert.match(log, /Serving 23 endpoints/);
  assert.match(log, /service state RUNNING/);
  assert.match(log, /Service stop requested, stopping/);
  assert.match(log, /\] Stopped\n/);
  // Every line cites the TypeScript source of its logging call (resolved when the exe was built).
  for (const line of log.split("\n").filter((l) => /^[IWEF]\d{4} /.test(l))) assert.match(line, / [\w-]+\.ts:\d+\] /, line);
  assert.match(log, / server-main\.ts:\d+\] Starting CSI-Proxy Server/);
});

test("-windows-service outside the SCM fails with a clear message", { skip }, async () => {
  const r = await runWine(w, [w.exeWin, "-windows-service", `-kubelet-path=${w.work.win}\\kubelet`], 90_000);
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stdout, /must be started by the Service Control Manager/);
});
