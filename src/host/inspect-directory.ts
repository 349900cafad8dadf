import { opendir, stat } from "node:fs/promises";
import { fsError } from "./fs-error.ts";

/**
 * Whether `path` is an existing directory and whether it has entries (following links, as mount
 * calls do); null when nothing is there. Other errors are coded by {@link fsError}.
 */
export async function inspectDirectory(path: string): Promise<{ isDirectory: boolean; empty: boolean } | null> {
  let st;
  try {
    st = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw fsError(e, "stat", path);
  }
  if (!st.isDirectory()) return { isDirectory: false, empty: false };
  const dir = await opendir(path).catch((e) => {
    throw fsError(e, "open directory", path);
  });
  try {
    return { isDirectory: true, empty: (await dir.read()) === null };
  } finally {
    await dir.close().catch(() => {});
  }
}
