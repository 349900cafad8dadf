/**
 * A fake sysfs tree of iSCSI sessions, shaped as the kernel's (/sys/class/iscsi_session/<session>
 * with targetname and device/connection*, /sys/class/iscsi_connection/<conn> with
 * persistent_address and persistent_port, device/target*\/<lun>/block/<name>/dev), under `sysDir`.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";

export interface FakeIscsiSession {
  session: string;
  iqn: string;
  connection: string;
  address: string;
  port: number;
  /** SCSI target directory name (`target4:0:0`). */
  target: string;
  /** [lun (`4:0:0:1`), block device name, `major:minor`]. */
  luns: [string, string, string][];
}

export async function writeIscsiSession(sysDir: string, s: FakeIscsiSession): Promise<void> {
  const session = path.join(sysDir, "class", "iscsi_session", s.session);
  await fs.mkdir(session, { recursive: true });
  await fs.writeFile(path.join(session, "targetname"), `${s.iqn}\n`);
  const device = path.join(session, "device");
  await fs.mkdir(path.join(device, s.connection), { recursive: true });
  const conn = path.join(sysDir, "class", "iscsi_connection", s.connection);
  await fs.mkdir(conn, { recursive: true });
  await fs.writeFile(path.join(conn, "persistent_address"), `${s.address}\n`);
  await fs.writeFile(path.join(conn, "persistent_port"), `${s.port}\n`);
  for (const [lun, name, dev] of s.luns) {
    const block = path.join(device, s.target, lun, "block", name);
    await fs.mkdir(block, { recursive: true });
    await fs.writeFile(path.join(block, "dev"), `${dev}\n`);
  }
}
