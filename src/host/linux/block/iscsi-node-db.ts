/**
 * Where the installed open-iscsi keeps its node database. Debian 12's open-iscsi (2.1.8) is built
 * with /etc/iscsi/nodes; Debian 13's (2.1.11), Fedora and RHEL with /var/lib/iscsi/nodes. iscsiadm has
 * no option that prints it, so the path compiled into the installed tools is read: the first of
 * iscsiadm and its libopeniscsiusr that holds exactly one of the known paths as a C string decides.
 * Otherwise the one of them that exists as a directory, otherwise /etc/iscsi/nodes. `-iscsi-node-db`
 * (the `override`) wins over all of it. Read once per host object, at its first use.
 * src/host/linux/block/iscsi-node-db.test.ts shows each rule.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** The layouts open-iscsi is built with. */
export const NODE_DB_PATHS = ["/etc/iscsi/nodes", "/var/lib/iscsi/nodes"] as const;

/** Where iscsiadm and its library are looked for (the fixed PATH host commands run with). */
const TOOL_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
const LIB_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib", "/lib"];

/** Bound on a binary read for the probe: iscsiadm and the library are well under 1 MiB. */
const MAX_BINARY_BYTES = 8 * 1024 * 1024;

export interface NodeDbProbe {
  /** `-iscsi-node-db`: taken as is (made absolute). */
  override?: string;
  /** Files to look into for the compiled-in path, in order (default: iscsiadm, then libopeniscsiusr). */
  binaries?: string[];
  /** Replaces the directory check (tests). */
  isDir?: (p: string) => boolean;
}

/** The node database directory and how it was found (logged at start-up at V(2)). */
export function findNodeDatabase(probe: NodeDbProbe = {}): { dir: string; how: string } {
  if (probe.override) return { dir: path.resolve(probe.override), how: "-iscsi-node-db" };
  for (const file of probe.binaries ?? installedBinaries()) {
    const found = compiledIn(file);
    if (found.length === 1) return { dir: found[0], how: `compiled into ${file}` };
  }
  const isDir = probe.isDir ?? ((p: string) => fs.statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false);
  const existing = NODE_DB_PATHS.filter(isDir);
  if (existing.length === 1) return { dir: existing[0], how: "the one that exists" };
  return { dir: NODE_DB_PATHS[0], how: "default" };
}

/** Which of {@link NODE_DB_PATHS} `file` holds as NUL-terminated strings ([] when unreadable). */
export function compiledIn(file: string): string[] {
  let bytes: Buffer;
  try {
    if (fs.statSync(file).size > MAX_BINARY_BYTES) return [];
    bytes = fs.readFileSync(file);
  } catch {
    return [];
  }
  return NODE_DB_PATHS.filter((p) => bytes.includes(`${p}\0`, 0, "latin1") || bytes.includes(`${p}/\0`, 0, "latin1"));
}

function installedBinaries(): string[] {
  const out: string[] = [];
  const tool = TOOL_DIRS.map((d) => path.join(d, "iscsiadm")).find((p) => fs.existsSync(p));
  if (tool) out.push(tool);
  for (const d of LIB_DIRS) {
    let names: string[];
    try {
      names = fs.readdirSync(d).filter((n) => n.startsWith("libopeniscsiusr.so"));
    } catch {
      continue;
    }
    out.push(...names.map((n) => path.join(d, n)));
  }
  return out;
}
