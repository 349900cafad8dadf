/**
 * iSCSI sessions and their disks as the kernel shows them in sysfs (/sys/class/iscsi_session,
 * /sys/class/iscsi_connection): reads only, no process. A missing directory or file reads as empty.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { TargetPortal } from "../../../groups/iscsi/types.ts";
import { readFileIfExists } from "../../../state/atomic-file.ts";

/** The names in `dir`, sorted; [] when it cannot be read. */
export async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return (await fs.readdir(dir)).sort();
  } catch {
    return [];
  }
}

/** sysfs session names (`sessionN`) under `sysDir` logged in to `iqn` through `portal` (address compared case-insensitively). */
export async function iscsiSessions(sysDir: string, portal: TargetPortal, iqn: string): Promise<string[]> {
  const classDir = path.join(sysDir, "class", "iscsi_session");
  const found: string[] = [];
  for (const session of await readdirOrEmpty(classDir)) {
    const targetName = (await readFileIfExists(path.join(classDir, session, "targetname")))?.trim();
    if (targetName !== iqn) continue;
    const device = path.join(classDir, session, "device");
    for (const conn of (await readdirOrEmpty(device)).filter((n) => n.startsWith("connection"))) {
      const connDir = path.join(sysDir, "class", "iscsi_connection", conn);
      const address = (await readFileIfExists(path.join(connDir, "persistent_address")))?.trim().toLowerCase();
      const port = Number((await readFileIfExists(path.join(connDir, "persistent_port")))?.trim());
      if (address === portal.targetAddress.toLowerCase() && port === portal.targetPort) found.push(session);
    }
  }
  return found;
}

/**
 * The disks of `sessions` (their SCSI LUNs' block devices), as disk numbers in the disk group's
 * numbering (src/host/linux/block/disk-numbers.ts `diskNumberOf`: (major << 20) | minor), in decimal.
 */
export async function sessionDisks(sysDir: string, sessions: readonly string[]): Promise<string[]> {
  const disks: string[] = [];
  for (const session of sessions) {
    const device = path.join(sysDir, "class", "iscsi_session", session, "device");
    for (const target of (await readdirOrEmpty(device)).filter((n) => /^target\d+:\d+:\d+$/.test(n))) {
      for (const lun of (await readdirOrEmpty(path.join(device, target))).filter((n) => /^\d+:\d+:\d+:\d+$/.test(n))) {
        for (const block of await readdirOrEmpty(path.join(device, target, lun, "block"))) {
          const dev = (await readFileIfExists(path.join(device, target, lun, "block", block, "dev")))?.trim();
          const m = dev ? /^(\d+):(\d+)$/.exec(dev) : null;
          if (m) disks.push(String(Number(m[1]) * 2 ** 20 + Number(m[2])));
        }
      }
    }
  }
  return disks;
}
