/**
 * A disk's name that survives a reboot, for intent records (state/intent-records.ts): its WWID
 * (`/sys/class/block/<name>/device/wwid`, SCSI/NVMe), else its serial (`device/serial`), else — for a
 * loop device — its backing file and offset (`loop/backing_file`, `loop/offset`). Without any of
 * those, `dev:<major>:<minor>`, which names the device only until it goes away. sysfs reads only.
 */
import { readFile, realpath } from "node:fs/promises";

const read = (p: string) => readFile(p, "utf8").then((s) => s.trim(), () => "");

export async function persistentDiskKey(devPath: string): Promise<string> {
  const name = (await realpath(devPath)).split("/").pop() ?? "";
  const sys = `/sys/class/block/${name}`;
  const wwid = await read(`${sys}/device/wwid`);
  if (wwid) return `wwid:${wwid}`;
  const serial = await read(`${sys}/device/serial`);
  if (serial) return `serial:${serial}`;
  const backing = await read(`${sys}/loop/backing_file`);
  if (backing) return `loop:${backing}@${(await read(`${sys}/loop/offset`)) || "0"}`;
  return `dev:${await read(`${sys}/dev`)}`;
}
