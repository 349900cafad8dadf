/**
 * The System group on Windows (pass-through per src/groups/system/host-api.ts):
 *
 * - BIOS serial number: `CIM_BIOSElement.SerialNumber` (root/cimv2, the first instance — on
 *   Windows the Win32_BIOS row), exactly upstream master's source, through the SMB/iSCSI/System
 *   PowerShell worker pool. No instance → null.
 * - Services: the Service Control Manager in process through koffi (src/win32-service/scm.ts), no
 *   process and no WMI. Windows' numbering is the wire's: dwStartType 0–4 = StartType
 *   BOOT/SYSTEM/AUTOMATIC/MANUAL/DISABLED, dwCurrentState 1–7 = ServiceStatus
 *   STOPPED…PAUSED (a delayed auto-start service is AUTOMATIC, as Win32_Service's StartMode
 *   "Auto" maps upstream).
 * - StartService: StartServiceW; "already running" (1056) is success, as upstream accepts
 *   Win32_Service.StartService()'s 10. StopService: ControlService(STOP); "not started" (1062) and
 *   "cannot accept control messages now" (1061: a pending state, upstream's accepted 5) are
 *   success — the service then waits for the state.
 * - Dependents: EnumDependentServicesW lists every dependent, directly or not; only the direct
 *   ones are returned (those whose lpDependencies name the service, or `+<its load-order group>`),
 *   which is what Win32_DependentService associates and what the service's dependents walk
 *   expects.
 */
import type { SystemHostApi } from "../../groups/system/host-api.ts";
import { ServiceStatus, StartType } from "../../groups/system/types.ts";
import { CsiProxyError, Code, internal } from "../../errors.ts";
import { Win32Error, WinError } from "../../win32/win32-errors.ts";
import type { ServiceControlManager } from "../../win32-service/scm.ts";
import type { PowerShellPool } from "./powershell/powershell-pool.ts";
import { recode } from "./powershell/worker-errors.ts";

/** dwStartType → the wire's StartType (the numbering is the same; anything else → BOOT, upstream's fallback). */
export function startTypeOf(n: number): StartType {
  return n >= 0 && n <= 4 ? (n as StartType) : StartType.Boot;
}

/** dwCurrentState → the wire's ServiceStatus (the same numbering; anything else → UNKNOWN). */
export function serviceStatusOf(n: number): ServiceStatus {
  return n >= 1 && n <= 7 ? (n as ServiceStatus) : ServiceStatus.Unknown;
}

const sameName = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export class WindowsSystemHost implements SystemHostApi {
  readonly #pool: PowerShellPool;
  readonly #scm: () => Promise<ServiceControlManager>;

  /** `scm` is loaded on first use (koffi), so the BIOS query works without it and tests can pass a fake. */
  constructor(pool: PowerShellPool, scm: ServiceControlManager | (() => Promise<ServiceControlManager>)) {
    this.#pool = pool;
    this.#scm = typeof scm === "function" ? scm : async () => scm;
  }

  async getBIOSSerialNumber(): Promise<string | null> {
    const v = await this.#pool.call("system.biosSerial").catch((err) => {
      throw recode(err, () => undefined);
    });
    if (v === null) return null;
    if (typeof v !== "object" || Array.isArray(v)) throw internal(`system.biosSerial: unexpected PowerShell output: ${JSON.stringify(v)?.slice(0, 100)}`);
    const serial = (v as { serialNumber?: unknown }).serialNumber;
    if (serial === null || serial === undefined) return "";
    if (typeof serial !== "string") throw internal(`system.biosSerial: SerialNumber is not a string: ${JSON.stringify(serial)?.slice(0, 100)}`);
    return serial;
  }

  async getService(name: string) {
    const info = (await this.#scm()).query(name);
    if (!info) return null;
    return { displayName: info.displayName || info.name, startType: startTypeOf(info.startType), status: serviceStatusOf(info.state) };
  }

  async startService(name: string): Promise<void> {
    const scm = await this.#scm();
    try {
      scm.start(name);
    } catch (err) {
      if (err instanceof Win32Error && err.errno === WinError.SERVICE_ALREADY_RUNNING) return;
      // the service's executable is missing: not "no such service"
      if (err instanceof Win32Error && (err.errno === WinError.FILE_NOT_FOUND || err.errno === WinError.PATH_NOT_FOUND)) {
        throw new CsiProxyError(Code.FailedPrecondition, err.message, { cause: err });
      }
      throw err;
    }
  }

  async stopService(name: string): Promise<void> {
    const scm = await this.#scm();
    try {
      scm.stop(name);
    } catch (err) {
      if (err instanceof Win32Error && (err.errno === WinError.SERVICE_NOT_ACTIVE || err.errno === WinError.SERVICE_CANNOT_ACCEPT_CTRL)) return;
      throw err;
    }
  }

  async getDependentServices(name: string): Promise<string[]> {
    const scm = await this.#scm();
    const group = scm.query(name)?.group ?? "";
    const direct: string[] = [];
    for (const dep of scm.dependents(name)) {
      const info = scm.query(dep);
      if (!info) continue; // deleted meanwhile
      if (info.dependencies.some((d) => sameName(d, name) || (group !== "" && sameName(d, `+${group}`)))) direct.push(dep);
    }
    return direct;
  }
}
