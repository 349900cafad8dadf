#!/usr/bin/env node
/**
 * Records upstream csi-proxy.exe's answers to the oracle corpus (test/oracle/corpus.ts) under Wine
 * and writes them, with provenance, to test/oracle/corpus/<tag>.json — the data
 * test/oracle/oracle-diff.test.ts compares our exe with.
 *
 *   node scripts/oracle-record.ts --exe /path/to/csi-proxy.exe --tag v1.1.3 --commit <sha>
 *
 * The exe is built elsewhere from upstream's source (this repository holds no upstream code, no
 * binary built from it and no recipe building it). An exe made by Go >= 1.22 needs `ProcessPrng`
 * from bcryptprimitives.dll, which Wine 8 lacks: a bcryptprimitives.dll providing it beside the exe
 * is copied into the prefix's system32.
 *
 * Each answer row: the request (paths under `{W}` = C:\csi-e2e-oracle, the server's kubelet dir being
 * `{W}\kubelet`), the gRPC code and message or the response fields, `crash` when the server died
 * during the call (it is restarted), and `powershell: true` when the server started a process during
 * the call (Wine's powershell.exe is a stub: such answers show Wine, not upstream). Flags rows: exit
 * code and output of the exe run with those arguments.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { setupWine } from "../test/windows/wine-harness.ts";
import { buildCorpus, flagCases, ORACLE_WORK } from "../test/oracle/corpus.ts";
import { abstract, bundleOracleClient, runFlags, runRows, killWineServer, servedPipes, startServer } from "../test/oracle/oracle-run.ts";

/** Upstream logs this once its groups are built, just before it creates its pipes. */
const READY = /Working directories/;
import { winPath } from "../test/windows/wine-harness.ts";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

function parseArgs(argv: string[]): { exe?: string; tag?: string; commit?: string; only?: string } {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(exe|tag|commit|only)(?:=(.*))?$/.exec(argv[i]!);
    if (!m) throw new Error(`unknown argument ${argv[i]}`);
    out[m[1]!] = m[2] ?? argv[++i] ?? "";
  }
  return out;
}

/** The Go version recorded in a Go binary's build info (`\xff Go buildinf:` header, Go >= 1.18 layout). */
export function goVersionOf(exe: string): string {
  const buf = fs.readFileSync(exe);
  const at = buf.indexOf(Buffer.from("\xff Go buildinf:", "latin1"));
  if (at < 0) return "unknown";
  const flags = buf[at + 15]!;
  if ((flags & 2) === 0) return "unknown (pointer-form build info)";
  let p = at + 32;
  let len = 0;
  for (let shift = 0; ; shift += 7) {
    const b = buf[p++]!;
    len |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
  }
  return buf.subarray(p, p + len).toString("utf8");
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const missing = [!args.exe && "--exe <path of upstream's csi-proxy.exe>", !args.tag && "--tag <upstream tag it was built from, e.g. v1.1.3>", !args.commit && "--commit <that tag's commit>"].filter(Boolean);
  if (missing.length) {
    console.error(`oracle-record: missing ${missing.join(", ")}.\nThe exe is built outside this repository from upstream's source (kubernetes-csi/csi-proxy at that tag) for GOOS=windows GOARCH=amd64.`);
    process.exit(2);
  }
  const exe = path.resolve(args.exe!);
  if (!fs.existsSync(exe)) {
    console.error(`oracle-record: no exe at ${exe}`);
    process.exit(2);
  }
  const setup = await setupWine("oracle");
  if ("skip" in setup) {
    console.error(`oracle-record: ${setup.skip}`);
    process.exit(1);
  }
  const w = setup;
  killWineServer(w);
  const dll = path.join(path.dirname(exe), "bcryptprimitives.dll");
  if (fs.existsSync(dll)) fs.copyFileSync(dll, path.join(w.driveC, "windows", "system32", "bcryptprimitives.dll"));
  const r = await bundleOracleClient(w);
  const exeWin = winPath(exe, w.driveC);
  const wineVersion = execFileSync(w.wine, ["--version"], { encoding: "utf8", env: w.env }).trim();

  let rows = buildCorpus();
  if (args.only) rows = rows.filter((row) => row.id.startsWith(args.only!));
  const started = Date.now();
  const probe = await startServer(r, exeWin, READY);
  const served = await servedPipes(r);
  probe.child.kill("SIGKILL");
  await probe.exited;
  killWineServer(w);
  // trace+process: Wine's kernelbase logs each CreateProcess of the server to its stderr, which marks
  // the rows during which the server started a process (PowerShell).
  const answers = await runRowsMarked(r, exeWin, rows);
  const flags = [];
  for (const f of flagCases) flags.push({ id: f.id, args: f.args, ...(await runFlags(r, exeWin, f.args)) });
  killWineServer(w);

  const outDir = path.join(root, "test", "oracle", "corpus");
  fs.mkdirSync(outDir, { recursive: true });
  const record = {
    provenance: {
      source: "kubernetes-csi/csi-proxy",
      tag: args.tag,
      commit: args.commit,
      go: goVersionOf(exe),
      goos: "windows/amd64",
      wine: wineVersion,
      work: ORACLE_WORK,
      pipesServed: Object.keys(served).filter((p) => served[p]),
      kubeletPath: "{W}\\kubelet",
      recordedBy: "scripts/oracle-record.ts",
      recordedAt: new Date().toISOString().slice(0, 10),
      seconds: Math.round((Date.now() - started) / 1000),
    },
    rows: rows.map((row) => ({ id: row.id, group: row.group, version: row.version, method: row.method, request: row.request, ...(row.fixture ? { fixture: true } : {}), ...answers.get(row.id)! })),
    flags,
  };
  const file = path.join(outDir, `${args.tag}.json`);
  fs.writeFileSync(file, withoutBuildPaths(JSON.stringify(abstract(record, ORACLE_WORK), null, 1)) + "\n");
  console.log(`oracle-record: ${rows.length} rows + ${flags.length} flag runs → ${path.relative(root, file)}`);
}

/** runRows, splitting the server's output by row to mark the rows that started a process. */
async function runRowsMarked(r: Awaited<ReturnType<typeof bundleOracleClient>>, exeWin: string, rows: ReturnType<typeof buildCorpus>) {
  const answers = new Map<string, Record<string, unknown>>();
  const results = await runRows(r, exeWin, rows, READY, ["-v", "5"], { WINEDEBUG: "-all,trace+process" }, (id, serverOutputDuring) => {
    if (/:trace:process:CreateProcessInternalW .*powershell/i.test(serverOutputDuring)) answers.set(id, { powershell: true });
  });
  for (const [id, a] of results) answers.set(id, { ...a, ...answers.get(id) });
  return answers;
}

await main();

/**
 * Go stack traces in a crash's output name the source files by the build machine's path; the record
 * keeps them relative to upstream's tree (`<upstream-src>/pkg/server/…`), so it names no machine path.
 */
function withoutBuildPaths(json: string): string {
  return json.replace(/(\\t)\/[^"\\\s]*?\/(pkg|vendor|cmd|client|internal)\//g, "$1<upstream-src>/$2/");
}
