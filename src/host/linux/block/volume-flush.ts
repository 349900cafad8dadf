/**
 * Flushing a Linux volume (WriteVolumeCache, and the flush before UnmountVolume) and the memory of
 * which mounts' write-back failures were already answered. Mounted (in this daemon's mount
 * namespace, else in another one): syncfs(2) of that filesystem through a descriptor opened for
 * this call (a descriptor held from the mount would pin the mount: docs/reliability.md "Flush" says
 * what each misses); mounted nowhere: fsync(2) of the device node.
 *
 * A write-back failure is answered DataLoss once per mount, as the kernel's errseq reports each
 * error once per descriptor: a later flush of the same mount that fails again resolves, the failure
 * having been reported (ext4 after a journal abort and xfs after a shutdown fail every flush until
 * unmounted), so that the caller's retry can go on and unmount. A flush that succeeds, and the
 * mount's end (unmounted here, or gone from the table), forget the report. At most
 * {@link MAX_REPORTED_MOUNTS} reports are kept (the oldest forgotten first); a restart forgets them all.
 */
import { Code, CsiProxyError } from "../../../errors.ts";
import type { UndoLog } from "../../../util/undo-retry.ts";
import { mountsOf } from "./snapshot-mounts.ts";
import type { BlockSnapshot } from "./block-snapshot.ts";
import type { VolumeRef } from "./volume-ids.ts";
import type { DevNumber } from "./block-types.ts";
import type { DeviceClaims } from "./device-claims.ts";
import type { WriteBack } from "./write-back.ts";

/** The block tools a flush uses. */
export type FlushTools = Pick<DeviceClaims, "mountsInAnyNamespace"> & WriteBack;

/** Mount instances (device, mount id) whose write-back failure was reported at most this many at a time. */
export const MAX_REPORTED_MOUNTS = 1024;
const reportPrefix = (dev: DevNumber) => `${dev.major}:${dev.minor}@`;
const reportKey = (dev: DevNumber, mountId: number | undefined) => `${reportPrefix(dev)}${mountId ?? "-"}`;

export class VolumeFlusher {
  readonly #tools: FlushTools;
  readonly #log: UndoLog | undefined;
  /** Mounts whose write-back failure was answered DataLoss, oldest first. */
  readonly #reported = new Map<string, { at: number; here: boolean }>();

  constructor(tools: FlushTools, log?: UndoLog) {
    this.#tools = tools;
    this.#log = log;
  }

  /** Flushes `vol` as `snap` shows it (see the module comment). */
  async flush(snap: BlockSnapshot, vol: VolumeRef): Promise<void> {
    for (const [key, r] of this.#reported) if (r.here && !snap.mounts.some((m) => reportKey(m, m.mountId) === key)) this.#reported.delete(key);
    const here = mountsOf(snap, vol.dev)[0];
    const there = here ? undefined : (await this.#tools.mountsInAnyNamespace(vol.dev))[0];
    if (!here && !there) return this.#tools.flushDevice(vol.devPath, vol.dev);
    const mountPoint = here ? here.mountPoint : `/proc/${there!.pid}/root${there!.mountPoint}`;
    const shown = here ? here.mountPoint : `${there!.mountPoint} (mount namespace of pid ${there!.pid})`;
    const key = reportKey(vol.dev, here ? here.mountId : there!.mountId);
    try {
      await this.#tools.flushFilesystem(mountPoint, here ? here.mountId : there!.mountId);
    } catch (e) {
      if (!(e instanceof CsiProxyError && e.code === Code.DataLoss)) throw e;
      const earlier = this.#reported.get(key);
      if (earlier) {
        this.#log?.warning(`flush of ${vol.devPath} (mounted at ${shown}) failed again (${e.message}); answered DataLoss once already, at ${new Date(earlier.at).toISOString()}`);
        return;
      }
      if (this.#reported.size >= MAX_REPORTED_MOUNTS) this.#reported.delete(this.#reported.keys().next().value!);
      this.#reported.set(key, { at: Date.now(), here: here !== undefined });
      throw new CsiProxyError(
        Code.DataLoss,
        `${vol.devPath} mounted at ${shown}: ${e.message}; data written to the volume that was not yet on disk may be lost (answered once for this mount: a later flush that fails again answers OK)`,
        { cause: e },
      );
    }
    this.#reported.delete(key);
  }

  /** `dev` was mounted here: a new mount may get the id of an earlier one of the device that ended elsewhere, whose report does not carry over. */
  mounted(dev: DevNumber): void {
    for (const key of this.#reported.keys()) if (key.startsWith(reportPrefix(dev))) this.#reported.delete(key);
  }

  /** The mount `m` was unmounted here: its report is forgotten (mount ids are reused). */
  unmounted(m: DevNumber & { mountId?: number }): void {
    this.#reported.delete(reportKey(m, m.mountId));
  }
}
