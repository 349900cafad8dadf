/**
 * The Windows filesystem host as the daemon serves it: every path operation admitted by `gate`
 * (gated-filesystem-host.ts), and the recursive deletes' Win32 calls and fs steps each admitted too
 * (gated-win32.ts), so that no call on a path whose share or volume hangs can take more than the
 * gate's slots for that root. `win32` should have its own `io` limiter (src/compose/windows.ts): the
 * gate, not the 2 slots shared with volume and disk calls, bounds the filesystem host's calls.
 */
import type { FilesystemHostApi } from "../../groups/filesystem/host-api.ts";
import { gateFilesystemHost } from "../gated-filesystem-host.ts";
import type { MountGate } from "../mount-gate.ts";
import { WindowsFilesystemHost, type ReparseProbe } from "./filesystem.ts";
import { gateWalkWin32 } from "./gated-win32.ts";

export function gatedWindowsFilesystemHost(win32: ReparseProbe, gate: MountGate, options: { localLookup?: (path: string) => "present" | "absent" | undefined } = {}): FilesystemHostApi {
  const host = new WindowsFilesystemHost(win32, { ...options, walk: { win32: gateWalkWin32(win32, gate), step: (p, op) => gate.run(p, op) } });
  return gateFilesystemHost(host, gate);
}
