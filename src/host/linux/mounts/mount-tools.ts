/**
 * Mounting a block device's filesystem for the volume host: mount(2) and umount2(2) on targets held
 * as directory handles (anchored-mount.ts: no link is followed), the private temporary directory a
 * grow mounts on, and what is at a mount target.
 */
import { mkdtemp, realpath, rmdir } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { inspectDirectory } from "../../inspect-directory.ts";
import { mountOnDir, unmountDir } from "./anchored-mount.ts";
import { loadLibc } from "../kernel/libc.ts";
import type { UndoLog } from "../../../util/undo-retry.ts";

export interface MountTools {
  /**
   * Mounts devPath (fsType, no options) on target, an absolute canonical directory, which is held as a
   * handle opened without following links; a link on the way or a target moved meanwhile: FailedPrecondition.
   */
  mount(devPath: string, target: string, fsType: string): Promise<void>;
  /**
   * Unmounts the mount whose mount point is target (not lazy, not forced), found through its parent
   * held as a handle; a link on the way or a different mount there: FailedPrecondition.
   */
  unmount(target: string): Promise<void>;
  /** Whether `path` is an existing directory, and whether it has entries; null when nothing is there. Follows symlinks. */
  inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null>;
  /** Creates a private empty directory for a temporary mount (mode 0700) and returns its path. */
  makeTempDir(): Promise<string>;
  /** Removes an empty directory made by makeTempDir. */
  removeTempDir(path: string): Promise<void>;
}

export interface MountToolsOptions {
  /** Where background cleanups (a mount that could not be undone: anchored-mount.ts) log; default stderr. */
  log?: UndoLog;
}

/** The mount tools of this host (stateless but for the log). */
export function createMountTools(options: MountToolsOptions = {}): MountTools {
  return {
    async mount(devPath, target, fsType) {
      await mountOnDir(await loadLibc(), devPath, target, fsType, { log: options.log });
    },

    async unmount(target) {
      await unmountDir(await loadLibc(), target);
    },

    inspectDirectory,

    async makeTempDir() {
      // Canonical: mount() opens it component by component and refuses symbolic links.
      return realpath(await mkdtemp(path.join(os.tmpdir(), "csi-proxy-grow-")));
    },

    async removeTempDir(p) {
      await rmdir(p);
    },
  };
}
