// A csi-proxy process that dies while sfdisk writes an empty GPT table (unfinished-table-write.test.ts).
// argv: <intentDir> <device> <backupImage> <backupOffset>
// Writes the intent record as the Linux disk host does (state/intent-records.ts, the device named by
// device-identity.ts), then runs the part of the write that a cut-short sfdisk gets out — the backup
// GPT entries and header at the end of the disk, which libfdisk writes first — with dd, and is killed
// (SIGKILL) before it sees the tool's end. What is left: a lone backup GPT header and the record.
import { IntentRecords } from "../../src/state/intent-records.ts";
import { persistentDiskKey } from "../../src/host/linux/block/device-identity.ts";
import { runCommand } from "../../src/host/exec/run-command.ts";
import { readFileSync } from "node:fs";

const [intentDir, device, backupImage, backupOffset] = process.argv.slice(2);
const records = new IntentRecords(intentDir);
await records.during(
  { deviceKey: await persistentDiskKey(device), devPath: device, operation: "write an empty GPT partition table", writes: ["gpt", "PMBR"], before: "no signature", command: `sfdisk ${device} (label: gpt)` },
  async (spawned) => {
    await runCommand("dd", [`if=${backupImage}`, `of=${device}`, "bs=512", `seek=${backupOffset}`, "conv=notrunc,fsync", "status=none"], { onSpawn: spawned });
    // Dies once the record names the tool's pid (written right after the spawn).
    const file = records.fileOf(await persistentDiskKey(device));
    for (const until = Date.now() + 10_000; !/"pid":\d/.test(readFileSync(file, "utf8")) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 5));
    process.kill(process.pid, "SIGKILL");
    await new Promise(() => {});
  },
);
