/**
 * Growing a Linux volume, apart from deciding whether to: how far its partition may grow, and
 * growing an unmounted xfs or ext4 on a private temporary mount (xfs_growfs works only on a mounted
 * filesystem; an ext4 grown online is grown by the kernel, crash-consistent at every point, where an
 * offline resize2fs cut short leaves a filesystem e2fsck rejects). The host (volume.ts) verifies the
 * volume before calling either.
 */
import { Code, CsiProxyError, failedPrecondition } from "../../../errors.ts";
import { describeSchedule, retryUndo, type UndoLog } from "../../../util/undo-retry.ts";
import { callSignal } from "../../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../../util/stop-if-aborted.ts";
import type { BlockReads } from "./block-reads.ts";
import type { Privileges } from "../kernel/privileges.ts";
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
 * Grows the unmounted, verified filesystem on `devPath` online wherever it can (by the kernel, journaled:
 * a call cut short leaves a consistent filesystem) on a private temporary mount; an ext4 offline
 * (e2fsck -f -p, then resize2fs: must-finish steps, never signalled, host/exec/host-steps.ts) only where
 * the kernel's online resize cannot be used: without CAP_SYS_RESOURCE (its ioctl's rule) or ext4.
 */
export async function growUnmounted(
  tools: MountTools & Pick<FilesystemTools, "growFilesystem" | "checkFilesystem"> & Pick<Privileges, "effectiveCapabilities"> & Pick<BlockReads, "kernelFilesystems">,
  devPath: string,
  family: "ext4" | "xfs",
  log: UndoLog | undefined,
): Promise<void> {
  const online = (await tools.effectiveCapabilities()).has("CAP_SYS_RESOURCE") && (await tools.kernelFilesystems()).has(family);
  const beforeStep = (before: string, done = NOTHING_CHANGED) => stopIfAborted(callSignal(), { before, done });
  if (family === "ext4" && !online) {
    beforeStep(`checking the filesystem on ${devPath} (e2fsck)`);
    await tools.checkFilesystem(devPath, family);
    beforeStep(`growing the filesystem on ${devPath}`, `e2fsck checked the filesystem on ${devPath} (fixing only what it fixes automatically); the filesystem was not grown`);
    return tools.growFilesystem(devPath, family, null);
  }
  beforeStep(`mounting ${devPath} on a temporary directory to grow its ${family}`);
  await growOnTemporaryMount(tools, devPath, family, log);
}

/**
 * Online growth (xfs_growfs, or resize2fs of a mounted ext4) of the unmounted filesystem on `devPath`
 * through a private temporary mount, removed after. A temporary mount that cannot be unmounted stays:
 * the answer says where (with the unmount's code, FailedPrecondition when it had none), and a bounded
 * background retry (util/undo-retry.ts) removes it.
 */
export async function growOnTemporaryMount(
  tools: MountTools & Pick<FilesystemTools, "growFilesystem">,
  devPath: string,
  family: "ext4" | "xfs",
  log: UndoLog | undefined,
): Promise<void> {
  const dir = await tools.makeTempDir();
  let left = false;
  try {
    await tools.mount(devPath, dir, family);
    try {
      // An unmount failing below answers instead, saying where the mount stays.
      stopIfAborted(callSignal(), { before: `growing the ${family} on ${devPath}`, done: `the filesystem was not grown (it was mounted once at ${dir}, which replays its journal, and unmounted again)` });
      await tools.growFilesystem(devPath, family, dir);
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
