/**
 * A PowerShellPool whose workers are the fake worker (test/doubles/fake-powershell-worker.ts) started
 * with the exact arguments powershell.exe would get, plus access to what the workers received.
 */
import { after } from "node:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { PowerShellPool, type PowerShellPoolOptions } from "../../src/host/windows/powershell/powershell-pool.ts";
import { powershellArgs } from "../../src/host/windows/powershell/scripts/worker-script.ts";

const fakeWorker = fileURLToPath(new URL("../doubles/fake-powershell-worker.ts", import.meta.url));

export interface Recorded {
  /** One entry per worker start: its argv, the script decoded from -EncodedCommand, and its environment. */
  starts: { pid: number; argv: string[]; script: string | null; env: Record<string, string> }[];
  /** Every request line, verbatim, in order. */
  raw: string[];
  /** The request lines parsed. */
  requests: { id: number; op: string; args: Record<string, unknown> }[];
}

export interface FakePool {
  pool: PowerShellPool;
  dir: string;
  /** The argv given to each worker after the program: `<fake worker>.ts` + powershell.exe's arguments. */
  workerArgs: string[];
  recorded(): Recorded;
  /** Replaces the fixtures (read by workers started afterwards). */
  setFixtures(fixtures: Record<string, unknown>): void;
  close(): Promise<void>;
}

/**
 * `options.script` selects the worker script the workers are started with (default: the storage
 * script); pass `ops` with it (e.g. SMB_ISCSI_SYSTEM_OPS) so the pool accepts that script's ops.
 */
export function createFakePool(fixtures: Record<string, unknown> = {}, options: Partial<PowerShellPoolOptions> & { env?: Record<string, string>; script?: string } = {}): FakePool {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "csi-fake-ps-"));
  const record = path.join(dir, "record.jsonl");
  const fixturesFile = path.join(dir, "fixtures.json");
  fs.writeFileSync(fixturesFile, JSON.stringify(fixtures));
  const { script, env, ...poolOptions } = options;
  const workerArgs = [fakeWorker, ...powershellArgs(script)];
  const pool = new PowerShellPool({
    command: { file: process.execPath, args: workerArgs, env: { CSI_FAKE_PS_RECORD: record, CSI_FAKE_PS_FIXTURES: fixturesFile, ...env } },
    size: 2,
    ...poolOptions,
  });
  return {
    pool,
    dir,
    workerArgs,
    recorded() {
      const lines = fs.existsSync(record) ? fs.readFileSync(record, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
      const raw = lines.filter((l) => "raw" in l).map((l) => l.raw as string);
      return {
        starts: lines.filter((l) => "argv" in l),
        raw,
        requests: raw.map((l) => JSON.parse(l)),
      };
    },
    setFixtures(f) {
      fs.writeFileSync(fixturesFile, JSON.stringify(f));
    },
    async close() {
      await pool.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * For a test file: a one-worker fake pool per call of the function it returns (with `options` for
 * the script and ops), all closed after the file's tests.
 */
export function fakePoolsClosedAfter(options: Parameters<typeof createFakePool>[1] = {}): (fixtures: Record<string, unknown>) => FakePool {
  const pools: FakePool[] = [];
  after(() => Promise.all(pools.map((p) => p.close())));
  return (fixtures) => {
    const p = createFakePool(fixtures, { size: 1, ...options });
    pools.push(p);
    return p;
  };
}
