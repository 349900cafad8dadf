/**
 * The server's flag values checked before anything starts: each refusal is one line naming the flag,
 * the value and the cause (the program exits 2 on it, as on a command-line error); warnings are for
 * values that work but are likely a mistake (a kubelet directory that does not exist yet).
 * src/cli/server-config-check.test.ts shows each.
 */
import { statSync } from "node:fs";
import * as path from "node:path";

export interface ConfigCheck {
  /** One line per refused value; empty when every value may be used. */
  errors: string[];
  /** One line per doubtful value. */
  warnings: string[];
}

/** Splits `host:port` / `[v6]:port` / `:port`; the port must be an integer 0–65535. */
export function checkBindAddress(value: string): string | null {
  const m = /^(\[[^\]]*\]|[^:[\]]*):(\d+)$/.exec(value);
  if (!m) return `-metrics-bind-address ${JSON.stringify(value)}: not host:port (for example 127.0.0.1:9090)`;
  const port = Number(m[2]);
  if (!Number.isInteger(port) || port > 65535) return `-metrics-bind-address ${JSON.stringify(value)}: port ${m[2]} is out of range (0-65535)`;
  return null;
}

export function checkServerFlags(flags: Record<string, unknown>, platform: NodeJS.Platform): ConfigCheck {
  const errors: string[] = [];
  const warnings: string[] = [];
  const win = platform === "win32";
  const isAbs = (p: string) => (win ? path.win32 : path.posix).isAbsolute(p);
  if (flags["windows-service"] && !win) errors.push("-windows-service is only supported on Windows");
  if (flags["pipe-sddl"] && !win) errors.push("-pipe-sddl is only supported on Windows");
  const kubelet = flags["kubelet-path"] as string;
  if (!isAbs(kubelet)) errors.push(`-kubelet-path ${JSON.stringify(kubelet)} must be an absolute path`);
  for (const dir of (flags["working-dir"] as string[] | undefined) ?? []) {
    if (!isAbs(dir)) errors.push(`-working-dir ${JSON.stringify(dir)} must be an absolute path`);
  }
  if (!isAbs(flags["state-dir"] as string)) errors.push(`-state-dir ${JSON.stringify(flags["state-dir"])} must be an absolute path`);
  if (typeof flags["lock-dir"] === "string" && !isAbs(flags["lock-dir"])) errors.push(`-lock-dir ${JSON.stringify(flags["lock-dir"])} must be an absolute path`);
  const timeout = flags["host-command-timeout"] as number;
  if (timeout < 0) errors.push(`-host-command-timeout must be 0 or a number of seconds, not ${timeout}`);
  const fsType = flags["default-fs-type"] as string;
  if (fsType !== "ext4" && fsType !== "xfs") errors.push(`-default-fs-type must be ext4 or xfs, not ${JSON.stringify(fsType)}`);
  const nodeDb = flags["iscsi-node-db"] as string;
  if (nodeDb && !isAbs(nodeDb)) errors.push(`-iscsi-node-db ${JSON.stringify(nodeDb)} must be an absolute path`);
  const metrics = flags["metrics-bind-address"] as string;
  if (metrics) {
    const bad = checkBindAddress(metrics);
    if (bad) errors.push(bad);
  }
  if (isAbs(kubelet) && platform === process.platform) {
    let st;
    try {
      st = statSync(kubelet, { throwIfNoEntry: false });
    } catch (err) {
      warnings.push(`-kubelet-path ${kubelet} cannot be read (${(err as NodeJS.ErrnoException).code}); calls under it will fail until it can`);
    }
    if (st === undefined) warnings.push(`-kubelet-path ${kubelet} does not exist (yet); calls under it fail until the kubelet creates it`);
    else if (!st.isDirectory()) warnings.push(`-kubelet-path ${kubelet} is not a directory; calls under it will fail`);
  }
  return { errors, warnings };
}
