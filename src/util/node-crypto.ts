/**
 * node:crypto, loaded on its first use instead of at start-up. Loading it initialises OpenSSL's
 * tables and ~20 of Node's internal modules (~3 MB of resident memory, measured with
 * bench/path-exists.ts), which an idle server does not need: only SMB mappings and state-file
 * writes use it. Synchronous, so call sites keep their shape; the module is Node's own, the same
 * object a static import gives.
 */
import { createRequire } from "node:module";

type NodeCrypto = typeof import("node:crypto");

let loaded: NodeCrypto | undefined;

export function nodeCrypto(): NodeCrypto {
  // process.getBuiltinModule: Node ≥ 20.16 / 22.3 (and the exe); older Node 20 through require.
  loaded ??= (process.getBuiltinModule?.("node:crypto") as NodeCrypto | undefined) ?? (createRequire(import.meta.url)("node:crypto") as NodeCrypto);
  return loaded;
}
