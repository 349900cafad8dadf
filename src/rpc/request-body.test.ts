// src/rpc/request-body.ts on its own: request bytes held against the connection's and the process's budgets.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ByteBudget } from "./byte-budget.ts";
import { RequestBodies, type BodyHolder } from "./request-body.ts";

const holder = (): BodyHolder => ({ body: null, bodyBytes: 0, bodyCharged: 0 });
const prefixed = (length: number, fill = "a") => Buffer.concat([Buffer.from([0, length >>> 24, (length >>> 16) & 255, (length >>> 8) & 255, length & 255]), Buffer.alloc(length, fill)]);

describe("RequestBodies (src/rpc/request-body.ts)", () => {
  it("a body whole in one frame is used in place and charged nothing", () => {
    const process = new ByteBudget(1000);
    const bodies = new RequestBodies({ maxMessageBytes: 100, maxConnectionBytes: 1000, processBudget: process });
    const s = holder(), frame = prefixed(10);
    assert.equal(bodies.append(s, frame, 0, frame.length, true), undefined);
    assert.equal(s.body!.buffer, frame.buffer);
    assert.equal(process.used, 0);
    assert.deepEqual(bodies.take(s), frame);
  });

  it("a body in pieces: one buffer grown as bytes arrive (at most the declared size), its capacity charged to both budgets, returned when dropped", () => {
    const process = new ByteBudget(1000);
    const bodies = new RequestBodies({ maxMessageBytes: 100, maxConnectionBytes: 1000, processBudget: process });
    const s = holder(), whole = prefixed(50, "b");
    bodies.append(s, whole, 0, 3, false);
    assert.equal(s.bodyCharged, 5); // the prefix is not known yet
    bodies.append(s, whole, 3, 20, false);
    assert.deepEqual([s.bodyCharged, process.used, bodies.bufferedBytes, s.body!.length], [20, 20, 20, 20]);
    bodies.append(s, whole, 20, 30, false);
    assert.deepEqual([s.bodyCharged, s.body!.length], [40, 40]); // doubled
    bodies.append(s, whole, 30, 45, false);
    assert.deepEqual([s.bodyCharged, s.body!.length], [55, 55]); // the declared size caps it
    bodies.append(s, whole, 45, whole.length, true);
    assert.deepEqual(bodies.take(s), whole);
    assert.deepEqual([process.used, bodies.bufferedBytes, s.bodyCharged], [0, 0, 0]);
  });

  it("refuses a message above the maximum, declared or sent, holding nothing for it", () => {
    const bodies = new RequestBodies({ maxMessageBytes: 100, maxConnectionBytes: 1000, processBudget: new ByteBudget(1000) });
    const declared = prefixed(101);
    assert.equal(bodies.append(holder(), declared, 0, 10, false), "Received message larger than max (101 vs. 100)");
    const s = holder(), sent = prefixed(200);
    assert.equal(bodies.append(s, sent, 0, sent.length, true), "Received message larger than max (200 vs. 100)");
    assert.equal(bodies.bufferedBytes, 0);
  });

  it("refuses past the connection's budget and past the process's budget", () => {
    const process = new ByteBudget(150);
    const a = new RequestBodies({ maxMessageBytes: 100, maxConnectionBytes: 120, processBudget: process });
    const b = new RequestBodies({ maxMessageBytes: 100, maxConnectionBytes: 120, processBudget: process });
    const m = prefixed(95);
    assert.equal(a.append(holder(), m, 0, 100, false), undefined); // 100 charged
    assert.match(a.append(holder(), m, 0, 100, false)!, /exceeds its limit \(120 bytes per connection, 150 per process\)/);
    assert.match(b.append(holder(), m, 0, 100, false)!, /exceeds its limit/); // 100 + 100 > 150 process-wide
    assert.equal(process.used, 100);
  });

  it("a declared size alone holds nothing: 10 bytes of a declared 4 MiB message charge 10", () => {
    const process = new ByteBudget(16 * 1024 * 1024);
    const bodies = new RequestBodies({ maxMessageBytes: 4 * 1024 * 1024, maxConnectionBytes: 8 * 1024 * 1024, processBudget: process });
    const s = holder(), head = prefixed(4 * 1024 * 1024).subarray(0, 10);
    assert.equal(bodies.append(s, head, 0, 10, false), undefined);
    assert.deepEqual([s.bodyCharged, process.used], [10, 10]);
  });

  it("a partial body that gains too little within stallMs is reported and its charge returned; one that progresses is kept", async () => {
    const process = new ByteBudget(1 << 24);
    const stalled: BodyHolder[] = [];
    const bodies = new RequestBodies({ maxMessageBytes: 1 << 23, maxConnectionBytes: 1 << 24, processBudget: process, stallMs: 100, onStalled: (s) => stalled.push(s) });
    const whole = prefixed(1 << 22);
    const idle = holder(), moving = holder();
    bodies.append(idle, whole, 0, 10, false);
    bodies.append(moving, whole, 0, 10, false);
    let sent = 10;
    const started = performance.now();
    while (performance.now() - started < 400) {
      await new Promise((r) => setTimeout(r, 20));
      bodies.append(moving, whole, sent, sent + 65536, false); // 64 KiB each time: the minimum per period at least
      sent += 65536;
    }
    assert.deepEqual(stalled, [idle]);
    assert.deepEqual([idle.bodyCharged, idle.body], [0, null]);
    assert.equal(process.used, moving.bodyCharged);
    bodies.drop(moving);
    assert.equal(process.used, 0);
  });
});
