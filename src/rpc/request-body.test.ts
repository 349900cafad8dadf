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

  it("a body in pieces: one buffer of the declared size, charged in full to both budgets, returned when dropped", () => {
    const process = new ByteBudget(1000);
    const bodies = new RequestBodies({ maxMessageBytes: 100, maxConnectionBytes: 1000, processBudget: process });
    const s = holder(), whole = prefixed(50, "b");
    bodies.append(s, whole, 0, 3, false);
    assert.equal(s.bodyCharged, 5); // the prefix is not known yet
    bodies.append(s, whole, 3, 20, false);
    assert.deepEqual([s.bodyCharged, process.used, bodies.bufferedBytes, s.body!.length], [55, 55, 55, 55]);
    bodies.append(s, whole, 20, whole.length, true);
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
    assert.equal(a.append(holder(), m, 0, 10, false), undefined); // 100 charged
    assert.match(a.append(holder(), m, 0, 10, false)!, /exceeds its limit \(120 bytes per connection, 150 per process\)/);
    assert.match(b.append(holder(), m, 0, 10, false)!, /exceeds its limit/); // 100 + 100 > 150 process-wide
    assert.equal(process.used, 100);
  });
});
