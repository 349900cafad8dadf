// The client of `npm run bench:windows`, bundled by esbuild and run by node.exe 22 under Wine:
//
//   node.exe windows-client.cjs wait <args.json>   args: { pipes: string[], timeoutMs }
//       prints "waiting", then tries every pipe not yet accepted (net.connect, closed at once) every
//       5 ms until each has accepted once; prints `REPORT {"unixMs", "missing"}`: the wall clock (ms,
//       sub-ms) when the last one accepted, and the pipes that never did.
//   node.exe windows-client.cjs load <args.json>   args: { pipe, path, calls, warmup, concurrency }
//       one HTTP/2 connection over the pipe, `concurrency` callers issuing unary
//       /v1.Filesystem/PathExists(path) until `calls` have been measured after `warmup`; prints
//       `REPORT {"rps", "p50Us", "p99Us", "errors", "exists", "firstError"}`.
//
// The request is encoded once with the generated schema; each call sends the same bytes (5-byte gRPC
// prefix + message), so the client's per-call work is HTTP/2 framing only, for every server alike.
import * as net from "node:net";
import * as http2 from "node:http2";
import * as fs from "node:fs";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { PathExistsRequestSchema, PathExistsResponseSchema } from "../src/gen/filesystem/v1/api_pb.ts";

const nowMs = () => performance.timeOrigin + performance.now();

function tryPipe(pipe: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(pipe);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

async function wait(args: { pipes: string[]; timeoutMs: number }) {
  const pending = new Set(args.pipes);
  const deadline = Date.now() + args.timeoutMs;
  console.log("waiting");
  let last = 0;
  while (pending.size && Date.now() < deadline) {
    const results = await Promise.all([...pending].map(async (p) => [p, await tryPipe(p)] as const));
    for (const [p, ok] of results) if (ok) pending.delete(p);
    last = nowMs();
    if (pending.size) await new Promise((r) => setTimeout(r, 5));
  }
  return { unixMs: last, missing: [...pending].sort() };
}

async function load(args: { pipe: string; path: string; calls: number; warmup: number; concurrency: number }) {
  const msg = toBinary(PathExistsRequestSchema, create(PathExistsRequestSchema, { path: args.path }));
  const frame = Buffer.alloc(5 + msg.length);
  frame.writeUInt32BE(msg.length, 1);
  frame.set(msg, 5);
  const session = http2.connect("http://localhost", { createConnection: () => net.connect(args.pipe) });
  let sessionEnd: string | undefined;
  session.on("error", (e) => (sessionEnd ??= `session error: ${e}`));
  session.on("goaway", (code) => (sessionEnd ??= `GOAWAY ${code}`));
  session.on("close", () => (sessionEnd ??= "connection closed by the server"));
  let errors = 0;
  let firstError: string | undefined;
  let exists: boolean | undefined;
  const call = () =>
    new Promise<void>((resolve) => {
      const chunks: Buffer[] = [];
      let status: string | undefined;
      const fail = (why: string) => {
        errors++;
        firstError ??= why;
        resolve();
      };
      if (session.destroyed) return fail(`session ended: ${sessionEnd}`);
      const req = session.request({ ":method": "POST", ":path": "/v1.Filesystem/PathExists", "content-type": "application/grpc", te: "trailers" });
      req.on("data", (d: Buffer) => chunks.push(d));
      req.on("trailers", (t) => (status = String(t["grpc-status"])));
      req.on("response", (h) => {
        if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
      });
      req.on("error", (e) => fail(String(e)));
      req.on("end", () => {
        if (status !== "0") return fail(`grpc-status ${status}`);
        const body = Buffer.concat(chunks);
        if (exists === undefined) exists = fromBinary(PathExistsResponseSchema, body.subarray(5)).exists;
        resolve();
      });
      req.end(frame);
    });
  const run = async (n: number, lat?: number[]) => {
    let next = 0;
    const t0 = nowMs();
    await Promise.all(
      Array.from({ length: args.concurrency }, async () => {
        while (next < n) {
          const i = next++;
          const s = nowMs();
          await call();
          if (lat) lat[i] = (nowMs() - s) * 1000;
        }
      }),
    );
    return nowMs() - t0;
  };
  await run(args.warmup);
  errors = 0;
  firstError = undefined;
  const lat: number[] = new Array(args.calls);
  const ms = await run(args.calls, lat);
  session.close();
  lat.sort((a, b) => a - b);
  const pct = (q: number) => lat[Math.floor(q * (lat.length - 1))];
  return { rps: args.calls / (ms / 1000), p50Us: pct(0.5), p99Us: pct(0.99), errors, exists, firstError };
}

const [mode, argsFile] = process.argv.slice(2);
const args = JSON.parse(fs.readFileSync(argsFile, "utf8"));
const modes: Record<string, (a: any) => Promise<object>> = { wait, load };
modes[mode](args).then(
  (r) => console.log(`REPORT ${JSON.stringify(r)}`),
  (e) => console.log(`REPORT ${JSON.stringify({ fatal: String(e?.stack ?? e) })}`),
);
