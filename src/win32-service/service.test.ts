/**
 * The Windows service state machine (src/win32-service/service.ts) without FFI: what ServiceMain and
 * HandlerEx report to the SCM for start, stop, shutdown, interrogate and failures. The FFI path is
 * exercised under Wine by wine-service.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServiceController, ServiceControl, ServiceState } from "./service.ts";

function harness(options: { startFails?: boolean; stopFails?: boolean; slowStart?: boolean } = {}) {
  const reports: [number, number, number, number][] = [];
  const events: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const controller = createServiceController(
    {
      async start() {
        events.push("start");
        if (options.slowStart) await gate;
        if (options.startFails) throw new Error("pipe busy");
      },
      async stop(reason) {
        events.push(`stop:${reason}`);
        if (options.stopFails) throw new Error("boom");
      },
      log: () => {},
    },
    { report: (state, accepts, exit) => void reports.push([state, accepts, exit?.win32 ?? 0, exit?.specific ?? 0]) },
  );
  return { controller, reports, events, release };
}

const settle = () => new Promise((r) => setTimeout(r, 10));

test("start → RUNNING accepting STOP|SHUTDOWN; STOP → STOP_PENDING → STOPPED after serving stopped", async () => {
  const h = harness();
  await h.controller.main();
  assert.deepEqual(h.reports, [
    [ServiceState.START_PENDING, 0, 0, 0],
    [ServiceState.RUNNING, 0x1 | 0x4, 0, 0],
  ]);
  assert.equal(h.controller.control(ServiceControl.STOP), 0);
  await settle();
  assert.deepEqual(h.reports.slice(2), [
    [ServiceState.STOP_PENDING, 0, 0, 0],
    [ServiceState.STOPPED, 0, 0, 0],
  ]);
  assert.deepEqual(h.events, ["start", "stop:stop"]);
  assert.equal(h.controller.failed, false);
  h.controller.control(ServiceControl.STOP); // a second STOP does not stop twice
  await settle();
  assert.deepEqual(h.events, ["start", "stop:stop"]);
});

test("SHUTDOWN stops like STOP; INTERROGATE re-reports the current state; other controls are not implemented", async () => {
  const h = harness();
  await h.controller.main();
  assert.equal(h.controller.control(ServiceControl.INTERROGATE), 0);
  assert.deepEqual(h.reports.at(-1), [ServiceState.RUNNING, 0x5, 0, 0]);
  assert.equal(h.controller.control(2 /* PAUSE */), 120);
  assert.equal(h.controller.control(ServiceControl.SHUTDOWN), 0);
  await settle();
  assert.deepEqual(h.events, ["start", "stop:shutdown"]);
  assert.equal(h.controller.state, ServiceState.STOPPED);
});

test("a failed start reports STOPPED with ERROR_SERVICE_SPECIFIC_ERROR (1066) / 1", async () => {
  const h = harness({ startFails: true });
  await h.controller.main();
  assert.deepEqual(h.reports.at(-1), [ServiceState.STOPPED, 0, 1066, 1]);
  assert.equal(h.controller.failed, true);
});

test("a start refused for its configuration (an unopenable -log_file) reports STOPPED with 1066 / the error's class, 2", async () => {
  const reports: number[][] = [];
  const controller = createServiceController(
    { start: () => Promise.reject(Object.assign(new Error("csi-proxy: -log_file x: cannot open"), { serviceExitCode: 2 })), stop: async () => {}, log: () => {} },
    { report: (state, accepts, exit) => void reports.push([state, accepts, exit?.win32 ?? 0, exit?.specific ?? 0]) },
  );
  await controller.main();
  assert.deepEqual(reports.at(-1), [ServiceState.STOPPED, 0, 1066, 2]);
});

test("STOP during start-up: the service never reports RUNNING", async () => {
  const h = harness({ slowStart: true });
  const main = h.controller.main();
  h.controller.control(ServiceControl.STOP);
  h.release();
  await main;
  await settle();
  assert.ok(!h.reports.some(([s]) => s === ServiceState.RUNNING));
  assert.equal(h.controller.state, ServiceState.STOPPED);
});

test("a failing stop still reports STOPPED, with exit code 1066 / 2", async () => {
  const h = harness({ stopFails: true });
  await h.controller.main();
  h.controller.control(ServiceControl.STOP);
  await settle();
  assert.deepEqual(h.reports.at(-1), [ServiceState.STOPPED, 0, 1066, 2]);
});

test("a long stop (waiting for a Format) reports STOP_PENDING again every checkpoint interval until STOPPED", async () => {
  const reports: number[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const controller = createServiceController(
    { start: async () => {}, stop: () => held, log: () => {} },
    { report: (state) => void reports.push(state) },
    { checkpointMs: 20 },
  );
  await controller.main();
  controller.control(ServiceControl.STOP);
  await new Promise((r) => setTimeout(r, 110));
  const pending = reports.filter((s) => s === ServiceState.STOP_PENDING).length;
  release();
  assert.ok(pending >= 3, `STOP_PENDING reported ${pending} times while the stop ran`);
  while (controller.state !== ServiceState.STOPPED) await new Promise((r) => setTimeout(r, 5));
  const after = reports.length;
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(reports.length, after, "no report after STOPPED");
  assert.equal(reports.at(-1), ServiceState.STOPPED);
});
