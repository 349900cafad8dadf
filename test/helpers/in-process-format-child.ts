// A driver process using csi-proxy-ts/in-process (no daemon), run by test/faults/in-process-cancel.test.ts
// inside the fault rig's mount namespace (its mkfs.ext4 hangs with SIGTERM ignored): finds the disk
// of a loop device, partitions it, then calls FormatVolume and cancels it `abortMs` after the
// stand-in mkfs started — the typed API through its AbortSignal, the grpc-style client through
// call.cancel() — and prints one JSON line: the answer's code and message, how long after the
// cancel it came, and whether the stand-in mkfs (pid from `pidFile`) was alive at the answer
// and 1 s after it.
import { existsSync, readFileSync } from "node:fs";
import { createInProcessApi } from "../../src/in-process/typed-api.ts";
import { createInProcessClient } from "../../src/in-process/in-process-client.ts";
import type { ProxyConfig } from "../../src/proxy-config.ts";
import { processAlive } from "./process-alive.ts";

const args = JSON.parse(process.argv[2]) as { kubelet: string; stateDir: string; socketDir: string; loopFile: string; pidFile: string; abortMs: number; client: "typed" | "grpc" };
const config: ProxyConfig = { platform: "linux", kubeletPath: args.kubelet, workingDirs: [], socketDir: args.socketDir, requirePrivacy: true, defaultFsType: "ext4", stateDir: args.stateDir, allowedServices: [] };
const api = await createInProcessApi(config);
const { diskIDs } = await api.disk.v1.listDiskIDs({});
const diskNumber = Number(Object.entries(diskIDs).find(([, ids]) => ids.serialNumber === args.loopFile)?.[0]);
await api.disk.v1.partitionDisk({ diskNumber });
const volumeId = (await api.volume.v1.listVolumesOnDisk({ diskNumber, partitionNumber: 0 })).volumeIds[0];

// Cancelled once the stand-in mkfs is running (its pid file written), so the test does not depend on how long the checks before mkfs take.
let abortedAt = 0;
const whenMkfsRuns = async (cancel: () => void) => {
  while (!existsSync(args.pidFile) || !readFileSync(args.pidFile, "utf8").trim()) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, args.abortMs));
  abortedAt = Date.now();
  cancel();
};
let answer: { code?: number; message?: string };
if (args.client === "typed") {
  const ac = new AbortController();
  void whenMkfsRuns(() => ac.abort());
  answer = await api.volume.v1.formatVolume({ volumeId }, { signal: ac.signal }).then(
    () => ({}),
    (e: { code?: number; message?: string }) => ({ code: e.code, message: e.message }),
  );
} else {
  const client = await createInProcessClient(config);
  answer = await new Promise((resolve) => {
    const call = client.clients.volume.FormatVolume({ volume_id: volumeId }, (err: { code?: number; details?: string } | null) => resolve({ code: err?.code, message: err?.details }));
    void whenMkfsRuns(() => call.cancel());
  });
}
const ms = abortedAt ? Date.now() - abortedAt : -1;
const pid = existsSync(args.pidFile) ? Number(readFileSync(args.pidFile, "utf8")) : 0;
const aliveAtAnswer = pid ? processAlive(pid) : null;
await new Promise((r) => setTimeout(r, 1000));
const aliveAfter1s = pid ? processAlive(pid) : null;
process.stdout.write(JSON.stringify({ ...answer, ms, pid, aliveAtAnswer, aliveAfter1s, volumeId }) + "\n");
process.exit(0);
