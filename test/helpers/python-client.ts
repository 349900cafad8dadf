// Runs the independent Python grpcio client (test/conformance/call_all.py) against a daemon.
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { repoRoot } from "./daemon-process.ts";

export const python = "/usr/bin/python3";
export const stubsDir = path.join(repoRoot, ".cache/python-stubs");

/** Why the Python client cannot run here, or undefined when it can (stubs are generated on demand). */
export function pythonClientUnavailable(): string | undefined {
  if (!existsSync(python)) return `${python} is not installed`;
  try {
    if (!existsSync(path.join(stubsDir, "disk_v1/api.desc"))) {
      execFileSync("bash", [path.join(repoRoot, "test/conformance/setup-python.sh"), stubsDir], { stdio: "pipe" });
    }
    return undefined;
  } catch (err) {
    return `python grpcio client setup failed: ${(err as { stderr?: Buffer }).stderr?.toString() ?? String(err)}`;
  }
}

export interface PythonResult {
  group: string;
  version: string;
  method: string;
  code: string;
  details: string;
  response: Record<string, unknown> | null;
}

/** Calls every RPC once; `requests` maps "group/version/Method" to a proto3-JSON request. */
export function callAllWithPython(socketDir: string, authority: "default" | "encoded" | "raw", requests: Record<string, unknown>, workDir: string): PythonResult[] {
  const file = path.join(workDir, `requests-${authority}.json`);
  writeFileSync(file, JSON.stringify(requests));
  const out = execFileSync(
    python,
    [path.join(repoRoot, "test/conformance/call_all.py"), "--socket-dir", socketDir, "--stubs", stubsDir, "--authority", authority, "--requests", file],
    { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  return out.trim().split("\n").map((line) => JSON.parse(line) as PythonResult);
}
