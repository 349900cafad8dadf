// One of two csi-proxy library users racing on one loop disk (test/integration/lock-dir-race.test.ts),
// each with a state directory of its own and the one lock directory given: partitions the disk when
// asked, waits for the `go` file, then runs FormatVolume `rounds` times and prints one JSON line
// (the errors, if any).
import { existsSync } from "node:fs";
import { createInProcessApi } from "../../src/in-process/typed-api.ts";

const args = JSON.parse(process.argv[2]) as { kubelet: string; stateDir: string; lockDir: string; loopFile: string; rounds: number; go: string; partition: boolean };
const quiet = { info: () => {}, warning: () => {} };
const api = await createInProcessApi({ kubeletPath: args.kubelet, stateDir: args.stateDir, lockDir: args.lockDir, logger: quiet });
const { diskIDs } = await api.disk.v1.listDiskIDs({});
const diskNumber = Number(Object.entries(diskIDs).find(([, ids]) => ids.serialNumber === args.loopFile)?.[0]);
if (args.partition) await api.disk.v1.partitionDisk({ diskNumber });
let volumeId = "";
for (let i = 0; i < 100 && !volumeId; i++) {
  volumeId = (await api.volume.v1.listVolumesOnDisk({ diskNumber, partitionNumber: 0 })).volumeIds[0] ?? "";
  if (!volumeId) await new Promise((r) => setTimeout(r, 50));
}
while (!existsSync(args.go)) await new Promise((r) => setTimeout(r, 5));
const errors: string[] = [];
for (let i = 0; i < args.rounds; i++) await api.volume.v1.formatVolume({ volumeId }).catch((e: Error) => errors.push(e.message));
process.stdout.write(JSON.stringify({ volumeId, errors }) + "\n");
process.exit(0);
