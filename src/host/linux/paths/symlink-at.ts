import * as fs from "node:fs/promises";
import { fsError } from "../../fs-error.ts";
import { withParent } from "./dir-handle.ts";

/**
 * Creates the symbolic link `linkPath` → `target` (the target is stored as text, never resolved
 * here) by name inside the link's parent directory, which is opened without following any link
 * (dir-handle.ts): a parent swapped for a link cannot place the new link elsewhere. Errors are coded
 * (existing entry AlreadyExists, missing parent NotFound, a link on the way FailedPrecondition).
 */
export async function symlinkAt(target: string, linkPath: string, type?: "dir" | "file", what = "symlink"): Promise<void> {
  await withParent(linkPath, async (parent, name) => {
    await fs.symlink(target, parent.at(name), type).catch((err) => {
      throw fsError(err, what, linkPath);
    });
  });
}
