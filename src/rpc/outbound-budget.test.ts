// src/rpc/outbound-budget.ts on its own, with scripted connections: reading stops while the client
// leaves answers unread and resumes on drain; calls wait over budget and start when room comes back; the process budget admits a connection's fair share and closes the
// largest holders of unsent bytes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { OutboundAccount, OutboundBudget } from "./outbound-budget.ts";

function connection(budget: OutboundBudget, options = { connectionLimit: 100_000, highWaterBytes: 1000, reserveBytes: 10_000 }) {
  const state = { socket: 0, pending: 0, paused: false, resumed: 0, evicted: false, started: 0 };
  const account = new OutboundAccount(budget, options, {
    socketUnsent: () => state.socket, pendingUnsent: () => state.pending,
    pauseSocket: () => (state.paused = true), resumeSocket: () => (state.paused = false),
    resumeFrames: () => state.resumed++, evict: () => (state.evicted = true), startWaiting: () => state.started++,
  });
  return { state, account };
}
const turn = () => new Promise((r) => setImmediate(r));

describe("OutboundBudget (src/rpc/outbound-budget.ts)", () => {
  it("a connection stops reading when its socket holds more than the high-water mark, and resumes on drain", () => {
    const { state, account } = connection(new OutboundBudget(1e9));
    state.socket = 1001;
    assert.equal(account.mayRead(), false);
    account.pause();
    assert.equal(state.paused, true);
    state.socket = 0;
    account.sync(); // the drain
    assert.deepEqual([state.paused, state.resumed], [false, 1]);
  });

  it("calls in flight fill the connection's budget: reading goes on, no call starts; a call that ends starts the waiting ones", () => {
    const { state, account } = connection(new OutboundBudget(1e9));
    for (let i = 0; i < 10; i++) account.reserve();
    assert.deepEqual([account.mayRead(), account.mayStart()], [true, false]);
    account.awaitStart();
    account.release();
    assert.deepEqual([state.paused, state.started], [false, 1]);
    account.release();
    assert.equal(state.started, 1, "started once per awaitStart");
  });

  it("answers waiting for WINDOW_UPDATE: reading goes on (the update is among the frames) but no call starts", () => {
    const { state, account } = connection(new OutboundBudget(1e9));
    state.pending = 95_000;
    assert.deepEqual([account.mayRead(), account.mayStart()], [true, false]);
  });

  it("process budget: full for a connection beyond its fair share; the one waiting resumes when it frees", async () => {
    const budget = new OutboundBudget(40_000);
    const a = connection(budget), b = connection(budget);
    for (let i = 0; i < 3; i++) a.account.reserve();
    b.account.reserve();
    assert.equal(budget.used, 40_000);
    // b holds 10 000, under its share (40 000 / 2): admitted; a holds 30 000: not.
    assert.equal(b.account.mayStart(), true);
    assert.equal(a.account.mayStart(), false);
    a.account.awaitStart();
    b.account.release();
    await turn();
    assert.equal(a.state.started, 1);
  });

  it("over the process budget, the connection holding the most unsent bytes is closed first", () => {
    const budget = new OutboundBudget(50_000);
    const small = connection(budget), large = connection(budget), reader = connection(budget);
    small.state.socket = 5_000;
    small.account.sync();
    large.state.socket = 30_000;
    large.account.sync();
    reader.state.socket = 20_000; // pushes the total over 50 000
    reader.account.sync();
    assert.deepEqual([small.state.evicted, large.state.evicted, reader.state.evicted], [false, true, false]);
    assert.equal(budget.used, 25_000);
  });
});
