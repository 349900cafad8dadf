#!/usr/bin/env node
/**
 * A stand-in for powershell.exe that speaks the worker protocol (host/windows/scripts/worker-script.ts),
 * for tests on any OS. Run as `node powershell-worker.ts <the powershell.exe arguments>`.
 *
 * - Records what it receives to $CSI_FAKE_PS_RECORD (JSON lines): first
 *   `{"argv": [...], "script": "<decoded -EncodedCommand>", "env": {...}}`, then every request line verbatim as
 *   `{"raw": "<line>"}`, so tests can assert the script is the constant and the data round-trips.
 * - Answers from $CSI_FAKE_PS_FIXTURES, a JSON file `{ "<op>": <behaviour> | [<behaviour>, ...] }`
 *   (a list is consumed one entry per call, the last one repeating). A behaviour is one of
 *   `{"result": <json>}`, `{"error": {...ErrorInfo}}`, `{"hang": true}`, `{"exit": <code>}`, plus `"delayMs"`,
 *   optionally with `"noise": "<text printed first, without the protocol marker>"`. Ops without a
 *   fixture answer `{"result": null}`; `ping` echoes its args.
 * - $CSI_FAKE_PS_NEVER_READY=1 never reports ready; $CSI_FAKE_PS_EXIT_AT_START=<code> exits at once.
 * - $CSI_FAKE_PS_IGNORE_TERM=1 ignores SIGTERM (what the pool's kill sends on Linux): a worker that does not
 *   end when killed, as a process stuck in the kernel; only SIGKILL ends it.
 */
import * as fs from "node:fs";
import * as readline from "node:readline";

const MARKER = "@@CSIPROXY@@ ";
const record = process.env.CSI_FAKE_PS_RECORD;
const fixtures: Record<string, unknown> = process.env.CSI_FAKE_PS_FIXTURES ? JSON.parse(fs.readFileSync(process.env.CSI_FAKE_PS_FIXTURES, "utf8")) : {};
const used: Record<string, number> = {};

const argv = process.argv.slice(2);
const enc = argv[argv.indexOf("-EncodedCommand") + 1];
const script = argv.includes("-EncodedCommand") && enc ? Buffer.from(enc, "base64").toString("utf16le") : null;
const note = (entry: object) => {
  if (record) fs.appendFileSync(record, JSON.stringify({ pid: process.pid, ...entry }) + "\n");
};
note({ argv, script, env: process.env });

if (process.env.CSI_FAKE_PS_IGNORE_TERM) process.on("SIGTERM", () => {});
if (process.env.CSI_FAKE_PS_EXIT_AT_START) process.exit(Number(process.env.CSI_FAKE_PS_EXIT_AT_START));
const send = (obj: object) => process.stdout.write(MARKER + JSON.stringify(obj).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")) + "\r\n");
if (!process.env.CSI_FAKE_PS_NEVER_READY) send({ ready: true, pid: process.pid });

type Behaviour = { result?: unknown; error?: object; hang?: boolean; exit?: number; noise?: string; delayMs?: number };
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  note({ raw: line });
  let req: { id: number; op: string; args: Record<string, unknown> };
  try {
    req = JSON.parse(line);
  } catch {
    send({ id: null, ok: false, error: { message: "malformed request", category: "InvalidData" } });
    return;
  }
  const f = fixtures[req.op];
  const list = Array.isArray(f) ? (f as Behaviour[]) : f ? [f as Behaviour] : [];
  const i = used[req.op] ?? 0;
  used[req.op] = i + 1;
  const b: Behaviour = list.length ? list[Math.min(i, list.length - 1)] : req.op === "ping" ? { result: { pong: true, echo: req.args?.echo ?? null } } : { result: null };
  const answer = () => {
    if (b.noise) process.stdout.write(b.noise + "\r\n");
    if (b.hang) return;
    if (b.exit !== undefined) process.exit(b.exit);
    if (b.error) send({ id: req.id, ok: false, error: b.error });
    else send({ id: req.id, ok: true, result: b.result ?? null });
  };
  if (b.delayMs) setTimeout(answer, b.delayMs);
  else answer();
});
