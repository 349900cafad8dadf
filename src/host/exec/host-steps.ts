/**
 * Every host step csi-proxy spawns, classified once: how it may be ended and whether it writes a
 * device. runCommand (run-command.ts) reads this table for the step its caller names; the reliability
 * docs' page on deadlines (docs/reliability.md, "Must-finish steps") restates it.
 *
 * - `stoppable`: ended on the call's deadline or cancel, the step bound, -host-command-timeout and the
 *   daemon's graceful stop (SIGTERM, SIGKILL after a grace). Stopping it leaves nothing worse than
 *   not having run it: reads, probes, waits, the kernel's own crash-consistent operations (online
 *   growth), and mkfs of the volume being formatted (a stopped mkfs leaves no filesystem that
 *   IsVolumeFormatted reports: the volume is formatted again by the retry).
 * - `must-finish`: rewrites on-disk metadata in place; a kill part-way leaves a filesystem fsck
 *   rejects or a table no retry can read. It is never signalled by anything csi-proxy does: at the
 *   call's deadline (or cancel, or the step bound) the call is answered DeadlineExceeded (Canceled)
 *   naming the step and its pid, "still running; the device stays locked until it ends", and the
 *   step is recorded as outliving its call (late-steps.ts); a graceful stop waits for it up to
 *   {@link MUST_FINISH_STOP_WAIT_MS}, then exits leaving it running.
 *
 * `writesDevice`: the step is handed the call's device lock descriptors (run-command.ts), so the
 * lock lasts as long as the tool, even past the daemon's death.
 */

/** How a step may be ended. */
export type StepKind = "stoppable" | "must-finish";

export interface HostStep {
  kind: StepKind;
  /** Handed the call's device lock descriptor(s): it writes the device the call holds. */
  writesDevice: boolean;
  /** Why it is classified so (for the docs and reviewers). */
  why: string;
}

/** The table: one row per step the Linux hosts spawn. A step not named here is a stoppable read. */
export const HOST_STEPS = {
  "mkfs": { kind: "stoppable", writesDevice: true, why: "formats the volume being formatted; a stopped mkfs leaves no filesystem IsVolumeFormatted reports, the retry formats again" },
  "e2fsck -p": { kind: "must-finish", writesDevice: true, why: "repairs metadata in place (only what is safe automatically); a kill mid-repair leaves it half-repaired" },
  "resize2fs offline": { kind: "must-finish", writesDevice: true, why: "rewrites group descriptors, the resize inode and moves inode tables; a kill leaves a filesystem e2fsck rejects" },
  "resize2fs online": { kind: "stoppable", writesDevice: true, why: "the kernel grows a mounted ext4 in journaled transactions (EXT4_IOC_RESIZE_FS): crash-consistent at every point" },
  "xfs_growfs": { kind: "stoppable", writesDevice: true, why: "the kernel grows a mounted xfs in one logged transaction per step (XFS_IOC_FSGROWFSDATA)" },
  "sfdisk": { kind: "must-finish", writesDevice: true, why: "writes a partition table (primary and backup GPT headers and entries); a kill between them leaves a table no tool reads" },
  "partx": { kind: "must-finish", writesDevice: true, why: "tells the kernel the table (BLKPG, one partition at a time); a kill part-way leaves the kernel out of step with the table" },
  "blockdev --setro/--setrw": { kind: "stoppable", writesDevice: true, why: "one ioctl setting a flag; nothing on the disk changes" },
  "losetup --set-capacity": { kind: "stoppable", writesDevice: false, why: "one ioctl re-reading a backing file's size" },
  "probe": { kind: "stoppable", writesDevice: false, why: "reads: blkid, wipefs --no-act, dumpe2fs -h, xfs_db -r, xfs_repair -n" },
  "service": { kind: "stoppable", writesDevice: false, why: "mount.cifs, umount, stat, iscsiadm, systemctl: no block device metadata of a volume is rewritten" },
} as const satisfies Record<string, HostStep>;

export type HostStepName = keyof typeof HOST_STEPS;

/** The row of `name` (a step not named is a stoppable read). */
export function hostStep(name: HostStepName | undefined): HostStep {
  return name ? HOST_STEPS[name] : HOST_STEPS.probe;
}

/**
 * How long a graceful stop waits for running must-finish steps before exiting anyway (they keep
 * running, holding their devices' locks): 5 minutes. The systemd unit's TimeoutStopSec covers it.
 */
export const MUST_FINISH_STOP_WAIT_MS = 5 * 60_000;
