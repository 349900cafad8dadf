// Builds bench/go (grpc-go PathExists server + load client) offline against Debian's
// golang-google-grpc-dev in GOPATH mode, into .cache/go-bench/, and runs its load client.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import * as path from "node:path";
import { repoRoot } from "./production-server.ts";

const cache = path.join(repoRoot, ".cache", "go-bench");
export const goBenchBinary = path.join(cache, "csi-proxy-bench");

/**
 * Installs golang-go + golang-google-grpc-dev when missing (root), then builds; returns the binary.
 * `goos: "windows"` cross-builds csi-proxy-bench.exe (named pipes: bench/go/dial_windows.go) for
 * bench/windows.ts's `--client go`.
 */
export function buildGoBench(goos?: "windows"): string {
  if (!existsSync("/usr/share/gocode/src/google.golang.org/grpc") || !existsSync("/usr/bin/go")) {
    execFileSync("bash", [path.join(repoRoot, "scripts/apt-install.sh"), "go-bench", "golang-go", "golang-google-grpc-dev"], { stdio: "inherit" });
  }
  mkdirSync(path.join(cache, "gopath"), { recursive: true });
  const out = goos ? `${goBenchBinary}.exe` : goBenchBinary;
  execFileSync("go", ["build", "-o", out, "."], {
    cwd: path.join(repoRoot, "bench/go"),
    stdio: "inherit",
    env: { ...process.env, GO111MODULE: "off", GOFLAGS: "", GOPATH: `${path.join(cache, "gopath")}:/usr/share/gocode`, GOCACHE: path.join(cache, "build-cache"), ...(goos ? { GOOS: goos, GOARCH: "amd64" } : {}) },
  });
  return out;
}

export interface LoadResult { rps: number; p50_us: number; p99_us: number; errors: number; firstError?: string; client: string }

/** One load run: one connection, `concurrency` callers, `calls` measured after `warmup`. */
export function runLoad(socket: string, requestPath: string, calls: number, concurrency: number, warmup = 500): LoadResult {
  const out = execFileSync(goBenchBinary, ["load", "-socket", socket, "-path", requestPath, "-calls", String(calls), "-warmup", String(warmup),
    "-concurrency", String(concurrency)], { encoding: "utf8" });
  const r = JSON.parse(out.trim()) as LoadResult;
  if (r.errors) throw new Error(`${r.errors} calls failed on ${socket}: ${r.firstError}`);
  return r;
}
