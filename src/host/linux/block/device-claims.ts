/**
 * Whether a block device is in use, as the kernel knows it: its exclusive claim (open O_EXCL), the
 * processes holding its node open or mapped (device-openers.ts), its mounts in every mount
 * namespace (namespace-mounts.ts) and the swap devices (/proc/swaps). Facts only; the services
 * decide what a use refuses. The claim is the kernel's own refusal: while held, nothing else can
 * mount or claim the device.
 */
import { open, stat } from "node:fs/promises";
import { constants } from "node:fs";
import type { DeviceOpener, DevNumber } from "./block-types.ts";
import { decodeDev } from "./block-parsers.ts";
import { unescapeOctal } from "../kernel/mountinfo.ts";
import { kernelText } from "./block-reads.ts";
import { scanDeviceOpeners } from "./device-openers.ts";
import { createNamespaceMounts } from "../mounts/namespace-mounts.ts";
import { fsError } from "../../fs-error.ts";
import { failedPrecondition } from "../../../errors.ts";
import { callSignal } from "../../../util/call-scope.ts";
import { NOTHING_CHANGED, StoppedBetweenSteps, stopIfAborted } from "../../../util/stop-if-aborted.ts";

/** How long read-only openers of a device node are given to close before they count (udev probing takes milliseconds). */
export const OPENER_SETTLE_MS = 1000;

/** A held exclusive claim on a block device (open with O_EXCL). */
export interface DeviceClaim {
  /** Ends the claim (closes the file). Idempotent. */
  release(): Promise<void>;
}

/** A mount seen in some mount namespace: the pid it was read through and the mount point there. */
export interface NamespaceMount {
  pid: number;
  mountPoint: string;
  /** The mount's id (mount ids are unique across namespaces); absent where the reader does not know it. */
  mountId?: number;
}

export interface DeviceClaims {
  /**
   * Takes the kernel's exclusive claim on a block device (open O_EXCL): while held, nothing else can
   * mount it, claim it, or claim its disk (for a partition) or any of its partitions (for a disk).
   * FailedPrecondition when the device is claimed already, or when the node no longer is device `dev`.
   */
  claimExclusive(devPath: string, dev: DevNumber): Promise<DeviceClaim>;
  /**
   * Processes other than this daemon holding one of `devs`' device nodes open or mapped
   * (device-openers.ts: /proc/<pid>/fd and map_files matched by st_rdev). When every opener found
   * holds the node read-only (udev's blkid probing after a change), they are looked at again for up
   * to {@link OPENER_SETTLE_MS} and only those still open are reported.
   */
  deviceOpeners(devs: readonly DevNumber[]): Promise<DeviceOpener[]>;
  /**
   * Mounts of the device number in every mount namespace this process can see (each /proc/<pid>/mountinfo,
   * one process per namespace), this process's own included: what FormatVolume names when it refuses a
   * mounted volume. Processes that end or cannot be read meanwhile are skipped.
   */
  mountsInAnyNamespace(dev: DevNumber): Promise<NamespaceMount[]>;
  /** Devices in use as swap (/proc/swaps). */
  readSwapDevices(): Promise<DevNumber[]>;
}

/** Exclusive claims refused with EBUSY are retried this often, this far apart (0.5 s in all). */
const CLAIM_ATTEMPTS = 10;
const CLAIM_RETRY_MS = 50;

/** Read-only openers are looked at again this often within OPENER_SETTLE_MS. */
const OPENER_SETTLE_STEP_MS = 100;

/** The claim on `devPath`, which must still be block device `dev`. */
async function claimExclusive(devPath: string, dev: DevNumber): Promise<DeviceClaim> {
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    // A holder that lets go within half a second (udev probing, a superblock released just after umount) is waited for.
    for (let attempt = 1; !fh; attempt++) {
      // Between attempts: a call aborted meanwhile takes no claim (nothing is changed by one).
      stopIfAborted(callSignal(), { before: `claiming ${devPath} exclusively`, done: NOTHING_CHANGED });
      try {
        fh = await open(devPath, constants.O_RDONLY | constants.O_EXCL);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EBUSY" || attempt >= CLAIM_ATTEMPTS) throw e;
        await new Promise((r) => setTimeout(r, CLAIM_RETRY_MS));
      }
    }
  } catch (e) {
    if (e instanceof StoppedBetweenSteps) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EBUSY") throw failedPrecondition(`${devPath} is in use: the kernel refuses an exclusive claim (mounted, or held by another program or device)`);
    if (code === "ENOENT" || code === "ENXIO") throw failedPrecondition(`${devPath} is gone (the device changed since it was looked up)`);
    throw fsError(e, "open", devPath);
  }
  const st = await fh.stat({ bigint: true }).catch(async (e: unknown) => {
    await fh.close();
    throw fsError(e, "stat", devPath);
  });
  const got = decodeDev(st.rdev);
  if (!st.isBlockDevice() || got.major !== dev.major || got.minor !== dev.minor) {
    await fh.close();
    throw failedPrecondition(`${devPath} is now device ${got.major}:${got.minor}, not ${dev.major}:${dev.minor} (the device changed since it was looked up)`);
  }
  let closed = false;
  return {
    release: async () => {
      if (closed) return;
      closed = true;
      await fh.close();
    },
  };
}

/** The in-use facts of this host. State: every namespace's table, each remembered until the kernel lists other mount ids for it (namespace-mounts.ts). */
export function createDeviceClaims(): DeviceClaims {
  const namespaces = createNamespaceMounts();
  return {
    claimExclusive,

    async deviceOpeners(devs) {
      let found = await scanDeviceOpeners(devs);
      // Only read-only openers: probing (udev's blkid) that ends within the settle time is not a use.
      for (const start = Date.now(); found.length > 0 && found.every((o) => o.access === "read") && Date.now() - start < OPENER_SETTLE_MS; ) {
        await new Promise((r) => setTimeout(r, OPENER_SETTLE_STEP_MS));
        stopIfAborted(callSignal(), { before: "looking again for processes holding the device nodes", done: NOTHING_CHANGED });
        found = await scanDeviceOpeners(devs, { pids: [...new Set(found.map((o) => o.pid))] });
      }
      return found;
    },

    mountsInAnyNamespace(dev) {
      return namespaces.mountsOf(dev.major, dev.minor);
    },

    async readSwapDevices() {
      const files = kernelText("/proc/swaps").split("\n").slice(1).map((line) => line.split(/\s+/)[0]).filter(Boolean);
      const devs = await Promise.all(
        files.map((file) =>
          stat(unescapeOctal(file), { bigint: true }).then(
            (st) => decodeDev(st.isBlockDevice() ? st.rdev : st.dev),
            () => null, // a swap file that vanished: nothing to protect
          ),
        ),
      );
      return devs.filter((d): d is DevNumber => d !== null);
    },
  };
}
