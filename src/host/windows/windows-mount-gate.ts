/**
 * The Windows host's {@link MountGate} (mount-gate.ts: its bounds, watchdog and Unavailable answer
 * are the same on both platforms). What differs is the key and the probe.
 *
 * Key: the root of the volume or share a path is on, found without a syscall (finding it with one —
 * GetVolumePathNameW, a reparse-point read — could itself hang on the dead share, outside any bound):
 * - `\\server\share\` for UNC paths (`\\?\UNC\server\share\…` too), lower-cased (SMB names are
 *   case-insensitive);
 * - `X:\` for drive-letter paths (`\\?\X:\…` too), upper-cased: a mapped network drive is its own key;
 * - `\\?\Volume{GUID}\` for volume GUID paths, lower-cased;
 * - learned links: a link or junction whose target is on another root (the SMB case: the kubelet's
 *   staging directory on C:\ is a symbolic link to `\\server\share\…`) is learned from the path
 *   policy's own resolutions, which the daemon makes anyway ({@link WindowsGateKeys.learn}): a path
 *   under the link is keyed by the target's root, so a dead share behind a link on C:\ marks the
 *   share, never C:\. At most {@link MAX_LEARNED_LINKS} links are kept (the oldest learned is
 *   dropped); a link not yet learned (never resolved while its target answered) counts against the
 *   root the link lies on — its hung calls are still bounded, by that root's slots.
 * A volume mounted in a folder (a mount point, not a link) is keyed by the root of the folder's path:
 * it is a local disk, not the failure this gate is for.
 *
 * Probe: GetFileAttributesW of a fresh name in the root (`<root>.csi-proxy-probe-<n>`), which the
 * file system or the SMB server must answer itself (a new name is in no cache of the redirector or,
 * under Wine, of the kernel); "not found", any error and a result all count as an answer.
 */
import { createMountGate, registerMountGate, type MountGate, type MountGateOptions } from "../mount-gate.ts";

/** Links into another root remembered for keying (see the module comment). */
export const MAX_LEARNED_LINKS = 1024;

const trimSep = (s: string) => s.replace(/[\\/]+$/, "");

/**
 * The root of `p` (see the module comment), or null when `p` is not an absolute Windows path (the
 * test doubles' POSIX paths: their first component is used).
 */
export function windowsRootOf(p: string): string {
  let s = p.replace(/\//g, "\\");
  // \\?\ and \??\ (NT namespace) prefixes: \\?\UNC\server\share → \\server\share, \\?\X:\ → X:\.
  const ns = /^\\(?:\\\?|\?\?)\\(.*)$/.exec(s);
  if (ns) {
    const rest = ns[1];
    if (/^UNC\\/i.test(rest)) s = "\\\\" + rest.slice(4);
    else if (/^[A-Za-z]:/.test(rest)) s = rest;
    else {
      const vol = /^(Volume\{[0-9A-Fa-f-]+\})/.exec(rest);
      return vol ? `\\\\?\\${vol[1].toLowerCase()}\\` : `\\\\?\\${rest.split("\\")[0].toLowerCase()}\\`;
    }
  }
  const drive = /^([A-Za-z]):/.exec(s);
  if (drive) return `${drive[1].toUpperCase()}:\\`;
  const unc = /^\\\\([^\\]+)\\([^\\]+)/.exec(s);
  if (unc) return `\\\\${unc[1].toLowerCase()}\\${unc[2].toLowerCase()}\\`;
  const posix = /^\/[^/]*/.exec(p);
  return posix ? posix[0] : p;
}

/** The comparable form of a path: separators `\`, no namespace prefix, no trailing separator, lower case. */
function comparable(p: string): string {
  let s = p.replace(/\//g, "\\");
  const ns = /^\\(?:\\\?|\?\?)\\(.*)$/.exec(s);
  if (ns) s = /^UNC\\/i.test(ns[1]) ? "\\\\" + ns[1].slice(4) : /^[A-Za-z]:/.test(ns[1]) ? ns[1] : s;
  return trimSep(s).toLowerCase();
}

const splitParts = (p: string) => trimSep(p.replace(/\//g, "\\")).split("\\");

export interface WindowsGateKeys {
  /** The gate key of `p`: a learned link's target root when `p` is under one, else {@link windowsRootOf}. */
  keyOf(p: string): string;
  /**
   * Tells the keys that the policy resolved `input` to `resolved` (every link on the way followed):
   * when they lie on different roots, the deepest prefix of `input` that the shared trailing
   * components leave over is a link (or lies under one) into `resolved`'s root and is remembered;
   * when they lie on the same root, no prefix of `input` leads elsewhere now and any link learned
   * at such a prefix is forgotten.
   */
  learn(input: string, resolved: string): void;
  /** Links remembered now (for tests and the docs' bounds). */
  learned(): number;
}

export function createWindowsGateKeys(options: { maxLinks?: number } = {}): WindowsGateKeys {
  const maxLinks = options.maxLinks ?? MAX_LEARNED_LINKS;
  /** comparable(link prefix) → the root its target lies on; insertion order = learning order. */
  const links = new Map<string, string>();

  const learnedPrefixOf = (c: string): string | undefined => {
    if (links.size === 0) return undefined;
    for (let cur = c; ; ) {
      const hit = links.get(cur);
      if (hit !== undefined) return cur;
      const cut = cur.lastIndexOf("\\");
      if (cut <= 0) return undefined;
      cur = cur.slice(0, cut);
    }
  };

  return {
    keyOf(p) {
      const prefix = learnedPrefixOf(comparable(p));
      return prefix === undefined ? windowsRootOf(p) : links.get(prefix)!;
    },
    learn(input, resolved) {
      const from = windowsRootOf(input);
      const to = windowsRootOf(resolved);
      const c = comparable(input);
      if (from === to) {
        for (let prefix = learnedPrefixOf(c); prefix !== undefined; prefix = learnedPrefixOf(c)) links.delete(prefix);
        return;
      }
      const a = splitParts(input);
      const b = splitParts(resolved);
      let shared = 0;
      while (shared < a.length - 1 && shared < b.length - 1 && a[a.length - 1 - shared].toLowerCase() === b[b.length - 1 - shared].toLowerCase()) shared++;
      const link = comparable(a.slice(0, a.length - shared).join("\\"));
      links.delete(link);
      links.set(link, to);
      if (links.size > maxLinks) links.delete(links.keys().next().value!);
    },
    learned: () => links.size,
  };
}

/** The probe's fresh name under `root` (a `\`-terminated root). */
let probes = 0;
export const probePath = (root: string) => `${root.endsWith("\\") ? root : root + "\\"}.csi-proxy-probe-${process.pid}-${++probes}`;

/**
 * A gate keyed by `keys`, probing a root with `attributes` (GetFileAttributesW) of a fresh name,
 * registered for the blocked-operations metric (the process keeps it).
 */
export function createWindowsMountGate(
  keys: WindowsGateKeys,
  attributes: (path: string) => Promise<unknown>,
  options: Omit<MountGateOptions, "mountOf" | "probe"> = {},
): MountGate {
  return registerMountGate(createMountGate({ ...options, mountOf: async (p) => keys.keyOf(p), probe: (root) => attributes(probePath(root)) }));
}

/**
 * The path policy's resolver under the gate of the path's key, teaching `keys` every resolution it
 * makes (links into another root: see the module comment).
 */
export function gateLearningResolver(resolve: (p: string) => Promise<string | null>, gate: MountGate, keys: WindowsGateKeys): (p: string) => Promise<string | null> {
  return async (p) => {
    const r = await gate.run(p, () => resolve(p));
    if (r !== null) keys.learn(p, r);
    return r;
  };
}
