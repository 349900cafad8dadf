/**
 * The Win32 calls of the Windows filesystem host's recursive deletes (the ancestors' pins and the
 * walk of windows-remove-tree.ts), each admitted by the {@link MountGate} of the path it names: a
 * delete is not gated as one operation (it runs for as long as the tree is large, which the watchdog
 * would take for a hang), but each of its calls is one short step, so a share that stops answering
 * mid-walk holds at most the gate's slots for its root and the walk's next step fails Unavailable
 * once the root is marked not responding (the walk then stops with its counts, as on any failure).
 *
 * A call on a handle is keyed by the path the handle was opened with (remembered from
 * openEntryNoFollow/openListing until closeHandle); the paths the walk passes for naming are the
 * same paths. closeHandle is never gated (see there). Never nested: the host's own gated methods (gated-filesystem-host.ts) do not call these.
 */
import type { MountGate } from "../mount-gate.ts";
import type { Handle } from "../../win32/win32.ts";
import type { ReparseProbe } from "./filesystem.ts";

export function gateWalkWin32(win32: ReparseProbe, gate: MountGate): ReparseProbe {
  /** The path each open handle of a walk was opened with (entries leave when the handle is closed). */
  const opened = new Map<Handle, string>();
  const remember = (h: Handle | null, p: string) => {
    if (h !== null) opened.set(h, p);
    return h;
  };
  return {
    getFileAttributes: (p) => gate.run(p, async () => win32.getFileAttributes(p)),
    reparseTag: (p) => gate.run(p, async () => win32.reparseTag(p)),
    openEntryNoFollow: (p, forDelete) => gate.run(p, async () => remember(await win32.openEntryNoFollow(p, forDelete), p)),
    fileInfo: (h, p) => gate.run(opened.get(h) ?? p, async () => win32.fileInfo(h, p)),
    openListing: (h, p) => gate.run(opened.get(h) ?? p, async () => remember(await win32.openListing(h, p), opened.get(h) ?? p)!),
    readDirectoryBatch: (h, restart, p) => gate.run(opened.get(h) ?? p, async () => win32.readDirectoryBatch(h, restart, p)),
    deleteByHandle: (h, p) => gate.run(opened.get(h) ?? p, async () => win32.deleteByHandle(h, p)),
    // Never refused: a handle the gate would not let close would stay open for the life of the
    // process. Bounded instead by the filesystem host's own Win32 limiter (src/compose/windows.ts).
    closeHandle(h) {
      opened.delete(h);
      return win32.closeHandle(h);
    },
  };
}
