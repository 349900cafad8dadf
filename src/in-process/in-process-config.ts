/**
 * The configuration of an in-process csi-proxy, checked as the daemon checks its flags: every
 * option is optional and takes the flag's default when undefined (null is a value, a wrong one);
 * anything given must be right, else an InvalidArgument CsiProxyError naming the option
 * (`config.<name>`) and what it expects.
 * Never a TypeError: the value is read through plain property reads of an own, plain object
 * (getters run once; a throwing getter is reported as that option's error).
 *
 * | option | flag | expected | default |
 * |---|---|---|---|
 * | platform | — | "linux" or "win32", the running one | the running one |
 * | kubeletPath | -kubelet-path | absolute path | /var/lib/kubelet (Windows C:\var\lib\kubelet) |
 * | workingDirs | -working-dir | array of absolute paths | [] |
 * | socketDir | -socket-dir | absolute path or "" (unused in-process: no sockets) | "" |
 * | requirePrivacy | -require-privacy | boolean | true |
 * | defaultFsType | -default-fs-type | "ext4" or "xfs" | "ext4" |
 * | pipeSddl | -pipe-sddl | string (unused in-process: no pipes) | unset |
 * | stateDir | -state-dir | absolute path | /var/lib/csi-proxy (Windows C:\ProgramData\csi-proxy) |
 * | lockDir | -lock-dir | absolute path: the node-wide lock directory, shared with the daemon (a pod mounts it, hostPath) | /run/csi-proxy-locks (Windows %ProgramData%\csi-proxy\locks) |
 * | allowedServices | -allowed-service | array of non-empty strings | [] |
 * | logger | — | { info(msg), warning(msg) } functions | warnings one line each on stderr, information dropped |
 *
 * Absolute means absolute for the platform (`/…` on Linux; `C:\…` or `\\server\share\…` on
 * Windows); a path with a NUL character is refused. Strings are at most 32 767 characters (the
 * longest Windows path), arrays at most 1 000 entries.
 */
import * as path from "node:path";
import { CsiProxyError, Code } from "../errors.ts";
import type { ProxyConfig } from "../proxy-config.ts";
import { describeValue } from "./describe-value.ts";
import { defaultLockDir } from "../state/lock-dir.ts";

/** What a library user passes: every option of ProxyConfig, each optional (flag defaults). */
export type InProcessConfig = Partial<ProxyConfig>;

type Logger = NonNullable<ProxyConfig["logger"]>;

/** Longest string option, characters (the longest Windows path, 32 767). */
const MAX_STRING = 32_767;
/** Most entries of an array option. */
const MAX_ENTRIES = 1000;

const KNOWN = ["platform", "kubeletPath", "workingDirs", "socketDir", "requirePrivacy", "defaultFsType", "pipeSddl", "stateDir", "lockDir", "allowedServices", "logger"] as const;

const invalid = (option: string, expected: string, got: unknown) =>
  new CsiProxyError(Code.InvalidArgument, `config.${option}: expected ${expected}, got ${describeValue(got)}`);

/** The running platform as ProxyConfig names it. */
export const runningPlatform = (): ProxyConfig["platform"] => (process.platform === "win32" ? "win32" : "linux");

/**
 * The logger of a library user who gave none: each warning one line on stderr; information (what
 * the daemon logs at start, e.g. the iSCSI node database in use) is dropped, so a quiet library
 * stays quiet on a program's stderr.
 */
export const stderrLogger: Logger = {
  info: () => {},
  warning: (msg) => process.stderr.write(`csi-proxy in-process: warning: ${msg}\n`),
};

function absolutePath(option: string, value: unknown, platform: ProxyConfig["platform"], allowEmpty = false): string {
  const what = `an absolute ${platform === "win32" ? "Windows path (C:\\… or \\\\server\\share\\…)" : "path (/…)"}${allowEmpty ? ' or ""' : ""}`;
  if (typeof value !== "string" || value.length > MAX_STRING || value.includes("\0")) throw invalid(option, what, value);
  if (allowEmpty && value === "") return value;
  const absolute = platform === "win32" ? /^([a-zA-Z]:[\\/]|\\\\[^\\]+\\[^\\]+)/.test(value) : path.posix.isAbsolute(value);
  if (!absolute) throw invalid(option, what, value);
  return value;
}

/** A copy of the array `value`, each entry checked by `each`; an array that cannot be read (a proxy's traps) is refused as not an array. */
function stringArray(option: string, value: unknown, each: (name: string, item: unknown) => string): string[] {
  let items: unknown[];
  try {
    if (!Array.isArray(value)) throw invalid(option, "an array", value);
    if (value.length > MAX_ENTRIES) throw invalid(option, `an array of at most ${MAX_ENTRIES} entries`, value);
    items = Array.from(value as unknown[]);
  } catch (e) {
    throw e instanceof CsiProxyError ? e : invalid(option, "an array", value);
  }
  return items.map((item, i) => each(`${option}[${i}]`, item));
}

function logger(value: unknown): Logger {
  if (typeof value !== "object" || value === null) throw invalid("logger", "an object with info(msg) and warning(msg) functions", value);
  const { info, warning } = value as Record<string, unknown>;
  if (typeof info !== "function" || typeof warning !== "function") throw invalid("logger", "an object with info(msg) and warning(msg) functions", value);
  return { info: (msg) => void Reflect.apply(info, value, [msg]), warning: (msg) => void Reflect.apply(warning, value, [msg]) };
}

/** Reads option `name` of `config`: undefined when absent; a throwing getter is that option's error. */
function read(config: object, name: string): unknown {
  try {
    return (config as Record<string, unknown>)[name];
  } catch (e) {
    throw new CsiProxyError(Code.InvalidArgument, `config.${name}: reading it threw: ${e instanceof Error ? e.message.slice(0, 200) : "a non-Error"}`);
  }
}

/**
 * Checks `value` (see module doc) and returns the full ProxyConfig, defaults filled in; throws
 * InvalidArgument. Whatever else reading the value throws (a proxy's traps, an array's throwing
 * getter) is reported as InvalidArgument too: nothing but a CsiProxyError leaves.
 */
export function checkInProcessConfig(value: unknown): ProxyConfig {
  try {
    return checkConfig(value);
  } catch (e) {
    if (e instanceof CsiProxyError) throw e;
    throw new CsiProxyError(Code.InvalidArgument, `config: expected a plain object of options, got one that cannot be read (${e instanceof Error ? e.message.slice(0, 200) : "a non-Error was thrown"})`);
  }
}

function checkConfig(value: unknown): ProxyConfig {
  if (value === undefined) value = {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CsiProxyError(Code.InvalidArgument, `config: expected an object of options (${KNOWN.join(", ")}), got ${describeValue(value)}`);
  }
  let keys: string[];
  try {
    keys = Object.keys(value);
  } catch {
    throw new CsiProxyError(Code.InvalidArgument, "config: expected a plain object of options, got an object whose keys cannot be listed");
  }
  for (const key of keys) {
    if (!(KNOWN as readonly string[]).includes(key)) {
      throw new CsiProxyError(Code.InvalidArgument, `config: unknown option ${JSON.stringify(key.slice(0, 100))} (options: ${KNOWN.join(", ")})`);
    }
  }
  const get = (name: (typeof KNOWN)[number]) => read(value as object, name);
  /** An option's value, its flag's default when undefined (null is a value, and a wrong one). */
  const or = (v: unknown, fallback: unknown) => (v === undefined ? fallback : v);
  const running = runningPlatform();
  const platformValue = or(get("platform"), running);
  if (platformValue !== "linux" && platformValue !== "win32") throw invalid("platform", `"linux" or "win32" (the running platform, "${running}")`, platformValue);
  if (platformValue !== running) {
    throw invalid("platform", `the running platform, "${running}" (the host layer of one platform cannot run on the other)`, platformValue);
  }
  const platform: ProxyConfig["platform"] = platformValue;
  const win = platform === "win32";
  const kubeletPath = absolutePath("kubeletPath", or(get("kubeletPath"), win ? "C:\\var\\lib\\kubelet" : "/var/lib/kubelet"), platform);
  const workingDirs = stringArray("workingDirs", or(get("workingDirs"), []), (name, item) => absolutePath(name, item, platform));
  const socketDir = absolutePath("socketDir", or(get("socketDir"), ""), platform, true);
  const requirePrivacy = or(get("requirePrivacy"), true);
  if (typeof requirePrivacy !== "boolean") throw invalid("requirePrivacy", "a boolean (true or false)", requirePrivacy);
  const defaultFsType = or(get("defaultFsType"), "ext4");
  if (defaultFsType !== "ext4" && defaultFsType !== "xfs") throw invalid("defaultFsType", '"ext4" or "xfs"', defaultFsType);
  const pipeSddl = get("pipeSddl");
  if (pipeSddl !== undefined && (typeof pipeSddl !== "string" || pipeSddl.length > MAX_STRING || pipeSddl.includes("\0"))) throw invalid("pipeSddl", "an SDDL string", pipeSddl);
  const stateDir = absolutePath("stateDir", or(get("stateDir"), win ? "C:\\ProgramData\\csi-proxy" : "/var/lib/csi-proxy"), platform);
  const lockDir = absolutePath("lockDir", or(get("lockDir"), defaultLockDir(platform)), platform);
  const allowedServices = stringArray("allowedServices", or(get("allowedServices"), []), (name, item) => {
    if (typeof item !== "string" || item === "" || item.length > 256 || item.includes("\0")) throw invalid(name, "a service name (a non-empty string)", item);
    return item;
  });
  const given = get("logger");
  return {
    platform, kubeletPath, workingDirs, socketDir, requirePrivacy, defaultFsType, stateDir, lockDir, allowedServices,
    ...(pipeSddl === undefined ? {} : { pipeSddl: pipeSddl as string }),
    logger: given === undefined ? stderrLogger : logger(given),
  };
}
