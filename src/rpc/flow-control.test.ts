// src/rpc/flow-control.ts on its own: window arithmetic as RFC 9113 §6.9 states it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FlowControl, serverPreface } from "./flow-control.ts";
import { Http2ConnectionError } from "./http2-connection-error.ts";
import { CONNECTION_WINDOW_BOOST, CONNECTION_WINDOW_REPLENISH, STREAM_RECEIVE_WINDOW } from "./transport-limits.ts";

describe("FlowControl (src/rpc/flow-control.ts)", () => {
  it("acknowledges received bytes on the connection in steps of CONNECTION_WINDOW_REPLENISH", () => {
    const flow = new FlowControl();
    assert.equal(flow.received(CONNECTION_WINDOW_REPLENISH - 1), 0);
    assert.equal(flow.received(2), CONNECTION_WINDOW_REPLENISH + 1);
    assert.equal(flow.received(1), 0);
  });

  it("takes what both windows and the client's frame size allow, and nothing when either is spent", () => {
    const flow = new FlowControl();
    const stream = { sendWindow: 100_000 };
    assert.equal(flow.take(stream, 1_000_000), 16384);
    assert.equal(flow.connection, 65535 - 16384);
    flow.maxFrame = 1 << 20;
    assert.equal(flow.take(stream, 1_000_000), 65535 - 16384);
    assert.equal(flow.take(stream, 10), 0);
    flow.connectionUpdate(10);
    assert.equal(flow.take({ sendWindow: 0 }, 10), 0);
    assert.equal(flow.fitsWhole({ sendWindow: 10 }, 10), true);
    assert.equal(flow.fitsWhole({ sendWindow: 9 }, 10), false);
  });

  it("SETTINGS_INITIAL_WINDOW_SIZE moves every stream's window by the difference (it may go negative)", () => {
    const flow = new FlowControl();
    const a = { sendWindow: 65535 }, b = { sendWindow: 100 };
    flow.setInitialWindow(1000, [a, b]);
    assert.deepEqual([a.sendWindow, b.sendWindow, flow.initialStreamWindow], [1000, 100 - 64535, 1000]);
  });

  it("window overflow: FLOW_CONTROL_ERROR on the connection; on a stream, the RST_STREAM code", () => {
    const flow = new FlowControl();
    assert.throws(() => flow.connectionUpdate(0x7fffffff), (e) => e instanceof Http2ConnectionError && e.code === 3);
    const s = { sendWindow: 10 };
    assert.equal(flow.streamUpdate(s, 0), 1);
    assert.equal(flow.streamUpdate(s, 5), 0);
    assert.equal(s.sendWindow, 15);
    assert.equal(flow.streamUpdate(s, 0x7fffffff), 3);
  });

  it("the server preface announces the stream window and boosts the connection window", () => {
    const p = serverPreface(1000);
    assert.deepEqual([p[3], p.readUInt16BE(9), p.readUInt32BE(11), p.readUInt16BE(15), p.readUInt32BE(17)], [4, 3, 1000, 4, STREAM_RECEIVE_WINDOW]);
    assert.deepEqual([p[21 + 3], p.readUInt32BE(21 + 9)], [8, CONNECTION_WINDOW_BOOST]);
  });
});
