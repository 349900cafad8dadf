/**
 * Start-up sweep of the temporary state files a killed daemon leaves behind: a kill -9 between
 * the exclusive create of `.<file>.tmp-<pid>-<hex>` and its rename (src/state/atomic-file.ts)
 * leaves that copy — for `iscsi/mutual-chap-secret` a 0600 file holding a full secret, which would
 * outlive a later removal of the secret. Removed here, once, after the state directory was secured
 * (state-dir.ts / state-dir-windows.ts) and before any service reads or writes its state, so no
 * write of this process is in progress.
 *
 * Linux: inside the held, fstat-checked state directory and its `iscsi` sub-directory
 * (src/state/state-subdir.ts; the sub-directory only when it exists, nothing is created), entries
 * unlinked by name in the held directory: a planted link is removed itself, never followed. Windows:
 * the state directory itself (protected DACL), regular files only. An area whose state was refused
 * at start-up is not touched. Names removed are logged (they hold no secret); entries that could not
 * be removed are logged as a warning. Never throws.
 */
import * as path from "node:path";
import { removeTempFiles, removeTempFilesIn } from "./atomic-file.ts";
import type { StateDirLog, StateDirTrust } from "./state-dir-trust.ts";
import { withStateDir } from "./state-subdir.ts";

/** Temporary files removed (relative names, e.g. `iscsi/.mutual-chap-secret.tmp-…`). */
export async function sweepStateLeftovers(trust: StateDirTrust, platform: "linux" | "win32", log?: StateDirLog): Promise<string[]> {
  const removed: string[] = [];
  const failed: string[] = [];
  const collect = (rel: string, r: { removed: string[]; failed: string[] }) => {
    removed.push(...r.removed.map((n) => (rel ? `${rel}/${n}` : n)));
    failed.push(...r.failed.map((n) => (rel ? `${rel}/${n}` : n)));
  };
  const step = async (what: string, fn: () => Promise<void>) => {
    await fn().catch((err: unknown) => log?.warning(`state directory ${trust.dir}: the start-up sweep of ${what} failed: ${err instanceof Error ? err.message : String(err)}`));
  };
  if (platform === "win32") {
    if (!trust.smb) await step("temporary state files", async () => collect("", await removeTempFiles(trust.dir, "smb-mappings.json", (a, b) => path.win32.join(a, b))));
  } else if (!trust.smb || !trust.iscsi) {
    await step("temporary state files", () =>
      withStateDir(trust.dir, [], async (top) => {
        if (!trust.smb) collect("", await removeTempFilesIn(top, "smb-mappings.json"));
        if (!trust.iscsi && (await top.list()).includes("iscsi")) {
          await withStateDir(trust.dir, ["iscsi"], async (iscsi) => collect("iscsi", await removeTempFilesIn(iscsi, "mutual-chap-secret")), { createMode: 0o700 });
        }
      }),
    );
  }
  if (removed.length) log?.warning(`state directory ${trust.dir}: removed ${removed.length} temporary file(s) a stopped daemon left: ${removed.join(", ")}`);
  if (failed.length) log?.warning(`state directory ${trust.dir}: could not remove ${failed.join(", ")} (not regular files, or not removable): remove them`);
  return removed;
}
