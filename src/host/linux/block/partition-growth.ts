/**
 * Growing a Linux volume, apart from deciding whether to: how far its partition may grow, and
 * growing an unmounted xfs (xfs_growfs works only on a mounted filesystem) on a private temporary
 * mount. The host (volume.ts) verifies the volume before calling either.
 */
import { Code, CsiProxyError, failedPrecondition } from "../../../errors.ts";
import { describeSchedule, retryUndo, type UndoLog } from "../../../util/undo-retry.ts";
import { callSignal } from "../../../util/call-scope.ts";
import { stopIfAborted } from "../../../util/stop-if-aborted.ts";
import type { VolumeRef } from "./volume-ids.ts";
import type { FilesystemTools } from "./filesystem-tools.ts";
import type { MountTools } from "../mounts/mount-tools.ts";

/**
 * The largest size `vol`'s partition can have: up to the next partition, or to the end of the disk
 * (before the GPT backup area); an MBR logical partition up to the next extended boot record or
 * the end of its container. Whole logical blocks. FailedPrecondition for a whole-disk filesystem or
 * an unreadable partition table.
 */
export function supportedPartitionSize(vol: VolumeRef): { maxBytes: bigint; alignBytes: bigint } {
  const p = vol.partition;
  const table = vol.disk.partitionTable;
  if (!p) throw failedPrecondition(`${vol.devPath} is a whole-disk filesystem, not a partition`);
  if (!table) throw failedPrecondition(`the partition table of ${vol.disk.devPath} cannot be read`);
  const unit = BigInt(Math.max(1, vol.disk.logicalBlockSize / 512));
  const diskSectors = vol.disk.sizeBytes / 512n;
  const first = (xs: bigint[]) => xs.filter((x) => x > p.startSectors).sort((a, b) => (a < b ? -1 : 1))[0];
  const entry = table.entries.find((e) => e.number === p.number);
  let end: bigint;
  if (entry?.ebrSectors !== undefined) {
    // MBR logical partition: up to the next extended boot record, else to the end of its extended container.
    const container = table.entries.find((e) => e.number <= 4 && e.startSectors <= p.startSectors && p.startSectors < e.startSectors + e.sizeSectors);
    const containerEnd = container ? container.startSectors + container.sizeSectors : diskSectors;
    end = first(table.entries.filter((e) => e.ebrSectors !== undefined).map((e) => e.ebrSectors!)) ?? containerEnd;
    if (end > containerEnd) end = containerEnd;
  } else {
    const next = first(table.entries.filter((e) => e.number <= 4 || table.type === "gpt").map((e) => e.startSectors));
    end = next ?? diskSectors - (table.type === "gpt" ? (table.trailerSectors ?? 33n * unit) : 0n);
  }
  return { maxBytes: ((end - p.startSectors) / unit) * unit * 512n, alignBytes: 512n * unit };
}

/**
 * xfs_growfs of the unmounted xfs on `devPath` through a private temporary mount, removed after. A
 * temporary mount that cannot be unmounted stays: the answer says where (with the unmount's code,
 * FailedPrecondition when it had none), and a bounded background retry (util/undo-retry.ts) removes it.
 */
export async function growXfsOnTemporaryMount(tools: MountTools & Pick<FilesystemTools, "growFilesystem">, devPath: string, log: UndoLog | undefined): Promise<void> {
  const dir = await tools.makeTempDir();
  let left = false;
  try {
    await tools.mount(devPath, dir, "xfs");
    try {
      // An unmount failing below answers instead, saying where the mount stays.
      stopIfAborted(callSignal(), { before: `growing the xfs on ${devPath}`, done: `the filesystem was not grown (it was mounted once at ${dir}, which replays its log, and unmounted again)` });
      await tools.growFilesystem(devPath, "xfs", dir);
    } finally {
      await tools.unmount(dir).catch((err: unknown) => {
        // The call's own temporary mount stays: the answer says where, a bounded retry removes it.
        left = true;
        const why = err instanceof Error ? err.message : String(err);
        const undo = async () => {
          await tools.unmount(dir);
          await tools.removeTempDir(dir).catch(() => {});
          return { done: true as const };
        };
        void retryUndo(`temporary mount of ${devPath} at ${dir}`, undo, log);
        throw new CsiProxyError(
          err instanceof CsiProxyError ? err.code : Code.FailedPrecondition,
          `${why}; ${devPath} stays mounted at ${dir} (the temporary mount for growing it); csi-proxy retries unmounting it (${describeSchedule()})`,
          { cause: err },
        );
      });
    }
  } finally {
    if (!left) await tools.removeTempDir(dir).catch(() => {}); // an empty private directory; a leftover is harmless
  }
}
