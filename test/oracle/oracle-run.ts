/**
 * Runs the oracle corpus (test/oracle/corpus.ts) against a csi-proxy.exe under Wine: used by
 * scripts/oracle-record.ts (upstream's exe → test/oracle/corpus/<tag>.json) and by
 * test/oracle/oracle-diff.test.ts (our exe, compared with those recordings).
 *
 * The server runs with `-kubelet-path {W}\kubelet` (W = ORACLE_WORK), the client is
 * test/oracle/fixtures/oracle-client.ts in node.exe 22. A row during which the server died is
 * answered `{crash: <what the client saw>, output: <server's last output>}`; a row that got no
 * status while the server lives is answered `{error}`; after either the server is started again.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as esbuild from "esbuild";
import { esbuildOptions } from "../../scripts/build-exe.ts";
import { runWine, startWine, winPath, killWineServer, root, type Background, type Wine } from "../windows/wine-harness.ts";
import { fixtureLayout, ORACLE_KUBELET, ORACLE_WORK, type CorpusRow } from "./corpus.ts";

export type Answer =
  | { ok: Record<string, unknown> }
  | { code: number; message: string }
  | { error: string }
  | { crash: unknown; output: string };

export interface OracleRunner {
  /** Windows path of the bundled client. */
  clientWin: string;
  w: Wine;
}

/** Bundles the oracle client for node.exe 22. */
export async function bundleOracleClient(w: Wine): Promise<OracleRunner> {
  if (w.work.win.toLowerCase() !== ORACLE_WORK.toLowerCase()) throw new Error(`oracle runs need the work dir ${ORACLE_WORK}, got ${w.work.win}`);
  const out = path.join(root, ".cache", "exe", "oracle-client.cjs");
  await esbuild.build(esbuildOptions(path.join(root, "test", "oracle", "fixtures", "oracle-client.ts"), out));
  return { clientWin: winPath(out, w.driveC), w };
}

let seq = 0;
const tmp = (w: Wine, name: string) => {
  const dir = path.join(w.work.linux, "oracle-io");
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${process.pid}-${++seq}-${name}`);
};

/** Which of the 23 pipes accept a connection now. */
export async function servedPipes(r: OracleRunner): Promise<Record<string, boolean>> {
  const out = tmp(r.w, "pipes.json");
  const res = await runWine(r.w, [r.w.nodeWin, r.clientWin, "pipes", winPath(out, r.w.driveC)], 120_000);
  if (!fs.existsSync(out)) throw new Error(`oracle client (pipes) wrote nothing (exit ${res.code}):\n${res.stdout}`);
  return JSON.parse(fs.readFileSync(out, "utf8")).served;
}

/**
 * Starts `exeWin` with the oracle kubelet path (plus `extraArgs`), waits for `ready` in its output,
 * then 2 s more. (Its pipes are not probed: under Wine a probe connection would use up the one
 * connection grpc-go's pipe serves, see the client.)
 */
export async function startServer(r: OracleRunner, exeWin: string, ready: RegExp, extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Background> {
  fs.mkdirSync(path.join(r.w.work.linux, "kubelet"), { recursive: true });
  const w = { ...r.w, env: { ...r.w.env, ...env } };
  const server = startWine(w, [exeWin, "-kubelet-path", ORACLE_KUBELET, ...extraArgs]);
  await server.waitFor(ready, 120_000);
  await new Promise((res) => setTimeout(res, 2000));
  return server;
}

/** Stops a server started by startServer (SIGKILL to its wine process, then waits). */
async function stopServer(server: Background): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL");
  await server.exited;
}

/**
 * Runs `rows` (with `{W}` placeholders) against the exe, one client process per stretch of rows;
 * restarts the server after a row that killed it. Returns the answers by row id. The server is
 * started here and stopped at the end.
 */
export async function runRows(
  r: OracleRunner,
  exeWin: string,
  rows: CorpusRow[],
  ready: RegExp,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
  onOutput?: (id: string, serverOutputDuringCall: string) => void,
): Promise<Map<string, Answer>> {
  const answers = new Map<string, Answer>();
  let server = await startServer(r, exeWin, ready, extraArgs, env);
  try {
    let from = 0;
    while (from < rows.length) {
      const out = tmp(r.w, "answers.jsonl");
      const argsFile = tmp(r.w, "rows.json");
      const batch = rows.slice(from).map((row) => substitute(row, ORACLE_WORK));
      fs.writeFileSync(argsFile, JSON.stringify({ work: ORACLE_WORK, serverLog: winPath(server.file, r.w.driveC), layout: fixtureLayout, rows: batch }));
      const res = await runWine(r.w, [r.w.nodeWin, r.clientWin, "rows", winPath(argsFile, r.w.driveC), winPath(out, r.w.driveC)], 30 * 60_000);
      const lines = fs.existsSync(out) ? fs.readFileSync(out, "utf8").split("\n").filter(Boolean) : [];
      for (const line of lines) {
        const { id, answer, log } = JSON.parse(line) as { id: string; answer: Record<string, unknown>; log: [number, number] };
        if (onOutput) onOutput(id, fs.readFileSync(server.file).subarray(log[0], log[1]).toString("utf8"));
        if ("lost" in answer) {
          await new Promise((res) => setTimeout(res, 1000));
          const died = server.child.exitCode !== null || server.child.signalCode !== null;
          answers.set(id, died ? { crash: answer.lost, output: tail(server.output()) } : (answer.lost as Answer));
          await stopServer(server);
          server = await startServer(r, exeWin, ready, extraArgs, env);
        } else {
          answers.set(id, answer as Answer);
        }
      }
      if (lines.length === 0) throw new Error(`oracle client answered nothing from row ${rows[from]!.id} (exit ${res.code}):\n${res.stdout}`);
      from += lines.length;
      if (res.code !== 0 && res.code !== 3) throw new Error(`oracle client failed after ${from} rows (exit ${res.code}):\n${res.stdout}`);
    }
  } finally {
    await stopServer(server);
  }
  return answers;
}

/** The exe run with `args` to completion: exit code and merged output. */
export async function runFlags(r: OracleRunner, exeWin: string, args: string[]): Promise<{ exitCode: number | null; output: string }> {
  const res = await runWine(r.w, [exeWin, ...args], 60_000);
  return { exitCode: res.code, output: res.stdout };
}

/** Replaces `{W}` in every string of the row (request included) with `work`. */
export function substitute<T>(value: T, work: string): T {
  return JSON.parse(JSON.stringify(value), (_k, v) => (typeof v === "string" ? v.split("{W}").join(work) : v));
}

/** Replaces the work dir (exact case) in every string with `{W}`. */
export function abstract<T>(value: T, work: string): T {
  return JSON.parse(JSON.stringify(value), (_k, v) => (typeof v === "string" ? v.split(work).join("{W}") : v));
}

const tail = (s: string) => s.split("\n").slice(-40).join("\n");

export { killWineServer };
