/**
 * Loading koffi (the FFI used for every Win32 call) on Windows, in development (`node src/main.ts`)
 * and inside the single-executable csi-proxy.exe.
 *
 * In the exe, koffi's native part is NOT an SEA asset extracted to %TEMP% (a DLL-planting risk
 * when the service runs as LocalSystem): scripts/build-exe.ts ships it beside the exe as
 * `koffi/win32_x64/koffi.node`, in the install directory the administrator controls. koffi looks
 * for `<process.resourcesPath>/koffi/<triplet>/koffi.node`, so that is pointed at the exe's
 * directory before koffi is first loaded.
 */
import * as path from "node:path";
import type * as KoffiModule from "koffi";

export type Koffi = typeof KoffiModule;

/** True inside a Node single-executable application (csi-proxy.exe). */
export async function isSea(): Promise<boolean> {
  try {
    const sea = (await import("node:sea")) as { isSea?: () => boolean };
    return sea.isSea?.() ?? false;
  } catch {
    return false;
  }
}

let loading: Promise<Koffi> | undefined;

/** koffi, loaded once. Rejects with a clear message when koffi.node is not beside the exe. */
export function loadKoffi(): Promise<Koffi> {
  loading ??= (async () => {
    if (await isSea()) {
      const proc = process as NodeJS.Process & { resourcesPath?: string };
      proc.resourcesPath ??= path.dirname(process.execPath);
    }
    try {
      const mod = (await import("koffi")) as Koffi & { default?: Koffi };
      return mod.default ?? mod;
    } catch (err) {
      const where = path.join(path.dirname(process.execPath), "koffi", `${process.platform}_${process.arch}`, "koffi.node");
      throw new Error(`cannot load koffi (Win32 FFI); it must be installed as ${where}: ${(err as Error).message}`, { cause: err });
    }
  })();
  return loading;
}
