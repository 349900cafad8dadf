// src/rpc/connection-admission.ts on its own: who makes room at the process and endpoint bounds,
// and the pressure sweep, on mocked time.
import { describe, it, mock, afterEach } from "node:test";
import assert from "node:assert/strict";
import { ConnectionAdmission, type AdmissionEntry } from "./connection-admission.ts";

function admitted(admission: ConnectionAdmission, endpoint: number, name: string, log: string[], busy = () => false): AdmissionEntry {
  const entry = admission.admit(endpoint);
  assert.ok(entry, `${name} admitted`);
  entry.evict = () => log.push(name);
  entry.busy = busy;
  return entry;
}

describe("ConnectionAdmission (src/rpc/connection-admission.ts)", () => {
  afterEach(() => mock.timers.reset());

  it("at the process bound: handshake (past its grace) first, then never called, then longest without a call; oldest first in each", () => {
    let t = 0;
    const admission = new ConnectionAdmission({ limit: 4, perEndpoint: 100, now: () => t });
    const log: string[] = [];
    const used1 = admitted(admission, 0, "used1", log), used2 = admitted(admission, 1, "used2", log);
    const fresh = admitted(admission, 2, "fresh", log), hand = admitted(admission, 3, "hand", log);
    for (const e of [used1, used2, fresh]) e.handshakeDone();
    used1.called();
    used2.called();
    used1.called(); // used1 called again: used2 is now the longest without a call
    void hand;
    t = 5000; // "hand" has been in its handshake beyond the grace
    for (let i = 0; i < 4; i++) {
      const e = admitted(admission, 5, `new${i}`, log);
      e.handshakeDone();
      e.called();
    }
    assert.deepEqual(log, ["hand", "fresh", "used2", "used1"]);
    assert.equal(admission.connections, 4);
  });

  it("never evicts a connection with a call in flight; with no candidate the newcomer is refused", () => {
    const admission = new ConnectionAdmission({ limit: 2, perEndpoint: 100 });
    const log: string[] = [];
    admitted(admission, 0, "busy1", log, () => true).handshakeDone();
    admitted(admission, 0, "busy2", log, () => true);
    assert.equal(admission.admit(1), undefined);
    assert.deepEqual(log, []);
  });

  it("at an endpoint's cap, the room is made on that endpoint", () => {
    const admission = new ConnectionAdmission({ limit: 100, perEndpoint: 2 });
    const log: string[] = [];
    admitted(admission, 1, "other", log);
    admitted(admission, 0, "a", log);
    admitted(admission, 0, "b", log);
    admitted(admission, 0, "c", log);
    assert.deepEqual(log, ["a"]);
  });

  it("closed connections free their place", () => {
    const admission = new ConnectionAdmission({ limit: 1, perEndpoint: 1 });
    const log: string[] = [];
    admitted(admission, 0, "a", log).closed();
    admitted(admission, 0, "b", log);
    assert.deepEqual([log, admission.connections], [[], 1]);
  });

  it("under pressure, connections in the handshake or never called are closed after the short idle; those that made a call stay", () => {
    mock.timers.enable({ apis: ["setInterval", "Date"] });
    const admission = new ConnectionAdmission({ limit: 4, perEndpoint: 100, pressureIdleMs: 1000, now: () => Date.now() });
    const log: string[] = [];
    const used = admitted(admission, 0, "used", log);
    used.handshakeDone();
    used.called();
    admitted(admission, 0, "fresh", log).handshakeDone();
    admitted(admission, 0, "hand", log);
    mock.timers.tick(500);
    assert.equal(log.length, 0);
    mock.timers.tick(2000);
    assert.deepEqual([...log].sort((a, b) => a.localeCompare(b)), ["fresh", "hand"]);
  });

  it("a client that has just connected (handshake within its grace) is evicted only after every idle connection", () => {
    let t = 0;
    const admission = new ConnectionAdmission({ limit: 3, perEndpoint: 100, handshakeGraceMs: 1000, now: () => t });
    const log: string[] = [];
    admitted(admission, 0, "idleA", log).handshakeDone();
    admitted(admission, 0, "idleB", log).handshakeDone();
    t = 5000;
    const legit = admitted(admission, 0, "legit", log);
    for (let i = 0; i < 3; i++) {
      t += 10; // a reconnect flood: each newcomer completes its handshake at once and stays idle
      admitted(admission, 0, `attacker${i}`, log).handshakeDone();
    }
    assert.deepEqual(log, ["idleA", "idleB", "attacker0"]);
    legit.handshakeDone();
    legit.called();
    assert.equal(admission.connections, 3);
  });
});
