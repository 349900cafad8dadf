/**
 * The one way the Linux block tools run a program: runCommand (argv array, no shell, fixed PATH,
 * LC_ALL=C; src/host/exec/run-command.ts), with a missing program reported as FailedPrecondition
 * naming the Debian package that installs it.
 */
import { HostCommandError, runCommand, type RunOptions } from "../../exec/run-command.ts";
import { failedPrecondition } from "../../../errors.ts";

/** The Debian package of each tool run here, for "install it" messages. */
const PACKAGE_OF: Record<string, string> = {
  blkid: "util-linux", wipefs: "util-linux", partx: "util-linux", blockdev: "util-linux", losetup: "mount", mount: "mount", umount: "mount",
  sfdisk: "fdisk", "mkfs.ext4": "e2fsprogs", e2fsck: "e2fsprogs", resize2fs: "e2fsprogs", dumpe2fs: "e2fsprogs",
  "mkfs.xfs": "xfsprogs", xfs_growfs: "xfsprogs", xfs_db: "xfsprogs", xfs_repair: "xfsprogs",
};

/** Bound of the tools that can take a while on large devices (mkfs, fsck, resize): 30 minutes. */
export const LONG_TOOL_RUN = { timeoutMs: 30 * 60_000 };

/** runCommand, with a missing tool reported as FailedPrecondition naming the package to install. */
export async function tool(file: string, args: readonly string[], options?: RunOptions) {
  try {
    return await runCommand(file, args, options);
  } catch (e) {
    if (e instanceof HostCommandError && e.exitCode === null && (e.cause as NodeJS.ErrnoException | undefined)?.code === "ENOENT") {
      throw failedPrecondition(`${file} is not installed: install the ${PACKAGE_OF[file] ?? file} package (scripts/install-linux-tools.sh installs every tool csi-proxy runs)`);
    }
    throw e;
  }
}
