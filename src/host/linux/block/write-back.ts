/**
 * Making written data durable before a volume is unmounted or handed back: syncfs(2) of a mounted
 * filesystem, fsync(2) of a block device node. A write-back error the kernel reports is DataLoss,
 * never OK: the caller's data did not reach the disk.
 */
import { open, readFile } from "node:fs/promises";
import { constants } from "node:fs";
import type { DevNumber } from "./block-types.ts";
import { decodeDev } from "./block-parsers.ts";
import { loadLibc } from "../kernel/libc.ts";
import { cappedTimeoutMs } from "../../exec/run-command.ts";
import { fsError } from "../../fs-error.ts";
import { Code, CsiProxyError, failedPrecondition } from "../../../errors.ts";

export interface WriteBack {
  /**
   * syncfs(2) of the filesystem mounted at `mountPoint` (opened as a directory, no final link
   * followed; with `mountId`, FailedPrecondition unless the opened directory lies on that mount),
   * through a descriptor opened for this call and closed after it. A write-back error the kernel
   * reports (EIO, ENOSPC, EDQUOT; EROFS from a filesystem whose journal aborted), or a filesystem
   * that can no longer be opened with EIO (xfs after a shutdown), rejects with DataLoss. The syncfs is bounded
   * by 60 s, or by -host-command-timeout when lower.
   */
  flushFilesystem(mountPoint: string, mountId?: number): Promise<void>;
  /**
   * fsync(2) of the block device node (opened read-only for this call; FailedPrecondition when it is
   * no longer device `dev`): the device's own cached writes. A write-back error rejects with DataLoss.
   */
  flushDevice(devPath: string, dev: DevNumber): Promise<void>;
}

/** Errnos by which syncfs(2) and fsync(2) report that written data did not reach the disk. */
const WRITE_BACK_ERRNOS: Record<string, string> = {
  EIO: "input/output error",
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  EROFS: "the filesystem turned read-only after an error",
};

/** DataLoss for a write-back failure (`what` failed), null for any other error. */
function writeBackError(e: unknown, what: string): CsiProxyError | null {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (!code || !(code in WRITE_BACK_ERRNOS)) return null;
  return new CsiProxyError(Code.DataLoss, `${what}: ${code} (${WRITE_BACK_ERRNOS[code]})`, { cause: e });
}

/** The write-back calls of this host (stateless). */
export function createWriteBack(): WriteBack {
  return {
    async flushFilesystem(mountPoint, mountId) {
      let fh: Awaited<ReturnType<typeof open>>;
      try {
        fh = await open(mountPoint, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      } catch (e) {
        throw writeBackError(e, `open the filesystem mounted at ${mountPoint}`) ?? fsError(e, "open", mountPoint);
      }
      try {
        if (mountId !== undefined) {
          const fdinfo = await readFile(`/proc/self/fdinfo/${fh.fd}`, "utf8").catch(() => "");
          const on = /^mnt_id:\s*(\d+)/m.exec(fdinfo)?.[1];
          if (on !== undefined && Number(on) !== mountId) throw failedPrecondition(`${mountPoint} is no longer the mount it was looked up as (mount ${on}, not ${mountId})`);
        }
        const libc = await loadLibc();
        await libc.syncfs(fh.fd, cappedTimeoutMs(60_000)).catch((e: unknown) => {
          throw writeBackError(e, `write back the filesystem mounted at ${mountPoint}`) ?? CsiProxyError.from(e);
        });
      } finally {
        await fh.close();
      }
    },

    async flushDevice(devPath, dev) {
      // Read-only: fsync needs no write access, and closing a descriptor opened for writing makes udev probe the device again.
      const fh = await open(devPath, constants.O_RDONLY).catch((e: unknown) => {
        throw fsError(e, "open", devPath);
      });
      try {
        const st = await fh.stat({ bigint: true });
        const got = decodeDev(st.rdev);
        if (!st.isBlockDevice() || got.major !== dev.major || got.minor !== dev.minor) {
          throw failedPrecondition(`${devPath} is now device ${got.major}:${got.minor}, not ${dev.major}:${dev.minor} (the device changed since it was looked up)`);
        }
        await fh.sync().catch((e: unknown) => {
          throw writeBackError(e, `write back ${devPath}`) ?? fsError(e, "fsync", devPath);
        });
      } finally {
        await fh.close();
      }
    },
  };
}
