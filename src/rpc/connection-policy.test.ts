// src/rpc/connection-policy.ts on its own: each abuse bound holds exactly at its limit.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConnectionPolicy } from "./connection-policy.ts";
import { Http2ConnectionError } from "./http2-connection-error.ts";
import { DEFAULT_LIMITS, type TransportLimits } from "./transport-limits.ts";

const policy = (limits: Partial<TransportLimits>) => new ConnectionPolicy({ ...DEFAULT_LIMITS, ...limits });
const calm = (message: string) => (err: unknown) => err instanceof Http2ConnectionError && err.code === 11 && err.message === message;

describe("ConnectionPolicy (src/rpc/connection-policy.ts)", () => {
  it("glitches: the burst passes, one more is too_many_glitches", () => {
    const p = policy({ glitchBurst: 5, glitchesPerSecond: 0.001 });
    for (let i = 0; i < 5; i++) p.glitch();
    assert.throws(() => p.glitch(), calm("too_many_glitches"));
  });

  it("resets (rapid reset): the burst passes, one more is too_many_resets; glitches are counted apart", () => {
    const p = policy({ resetBurst: 3, resetsPerSecond: 0.001, glitchBurst: 1 });
    for (let i = 0; i < 3; i++) p.reset();
    p.glitch();
    assert.throws(() => p.reset(), calm("too_many_resets"));
  });

  it("PINGs: strikes only when faster than the interval with nothing sent between; sending starts over", () => {
    const p = policy({ pingMinIntervalMs: 1000, maxPingStrikes: 2 });
    p.ping(0);
    p.ping(10);
    p.ping(20); // strikes 1, 2
    assert.throws(() => p.ping(30), calm("too_many_pings"));
    const q = policy({ pingMinIntervalMs: 1000, maxPingStrikes: 2 });
    for (let t = 0; t < 50; t += 10) {
      q.sent();
      q.ping(t);
    }
    const slow = policy({ pingMinIntervalMs: 1000, maxPingStrikes: 0 });
    for (let t = 0; t < 10_000; t += 1000) slow.ping(t);
  });

  it("header blocks and SETTINGS: bounded in bytes, frames and entries", () => {
    const p = policy({ maxHeaderBlockBytes: 100, maxHeaderBlockFrames: 4, maxSettingsEntries: 2 });
    p.headerBlock(100, 4);
    assert.throws(() => p.headerBlock(101, 1), calm("header block too large"));
    assert.throws(() => p.headerBlock(10, 5), calm("header block in too many frames"));
    p.settings(2);
    assert.throws(() => p.settings(3), calm("too many SETTINGS entries"));
  });
});
