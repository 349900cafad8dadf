// src/rpc/unary-call.ts on its own: one outcome per call, `running` true exactly while work runs.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { CallStream } from "./call-stream.ts";
import { runUnaryCall, type CallOutcome } from "./unary-call.ts";
import type { UnaryMethod } from "./grpc-service.ts";
import { Code, CsiProxyError } from "../errors.ts";

const prefixed = (flag: number, message: Buffer) => {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
};

function run(call: (m: Uint8Array, s: CallStream) => Promise<Uint8Array>, body: Buffer, encoding?: "gzip") {
  const stream = new CallStream(1, 65535);
  stream.method = { call } as unknown as UnaryMethod;
  stream.encoding = encoding;
  const log: string[] = [];
  const done = new Promise<string[]>((resolve) => {
    const outcome: CallOutcome = {
      respond: (_, r) => log.push(`respond ${Buffer.from(r).toString()}`),
      refuse: (_, s) => (log.push(`refuse ${s.code} ${s.message}`), log.length === 1 && !stream.running && resolve(log)),
      ended: (s) => (log.push(`ended ${s.running}`), resolve(log)),
    };
    runUnaryCall(stream, body, 100, outcome);
  });
  return { stream, done };
}

describe("runUnaryCall (src/rpc/unary-call.ts)", () => {
  it("runs the handler on the message, the stream as its context; running while it runs", async () => {
    let seen = "";
    const { stream, done } = run(async (m, s) => ((seen = `${Buffer.from(m).toString()} ${s.id}`), Buffer.from("pong")), prefixed(0, Buffer.from("ping")));
    assert.equal(stream.running, true);
    assert.deepEqual(await done, ["respond pong", "ended false"]);
    assert.equal(seen, "ping 1");
  });

  it("decompresses first; a handler's error is its status; the deadline's own reason reads as grpc-go's", async () => {
    const echo = async (m: Uint8Array) => m;
    assert.deepEqual(await run(echo, prefixed(1, gzipSync("zipped")), "gzip").done, ["respond zipped", "ended false"]);
    const failing = run(() => Promise.reject(new CsiProxyError(Code.NotFound, "no such path")), prefixed(0, Buffer.from("x")));
    assert.deepEqual(await failing.done, [`refuse ${Code.NotFound} no such path`, "ended false"]);
    const late = run((_, s) => {
      s.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
      return Promise.reject(s.abortedWith);
    }, prefixed(0, Buffer.from("x")));
    assert.deepEqual(await late.done, [`refuse ${Code.DeadlineExceeded} Deadline exceeded`, "ended false"]);
  });

  it("a bad message is refused before any handler (nothing ran: no ended)", async () => {
    let called = false;
    const { stream, done } = run(async () => ((called = true), new Uint8Array()), prefixed(0, Buffer.alloc(200)));
    assert.deepEqual(await done, [`refuse ${Code.ResourceExhausted} Received message larger than max (200 vs. 100)`]);
    assert.deepEqual([called, stream.running], [false, false]);
  });
});
