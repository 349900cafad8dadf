/**
 * The Service Control Manager as a client, in process through koffi (advapi32) — what the System
 * group's GetService/StartService/StopService need. No process is started (upstream master uses
 * WMI's Win32_Service; the PowerShell era ran Get-/Start-/Stop-Service).
 *
 *   query       OpenSCManagerW(CONNECT) + OpenServiceW(QUERY_CONFIG | QUERY_STATUS)
 *               + QueryServiceStatusEx(SC_STATUS_PROCESS_INFO) + QueryServiceConfigW
 *               (start type, display name, load-order group, dependencies);
 *               ERROR_SERVICE_DOES_NOT_EXIST → null
 *   start       OpenServiceW(SERVICE_START) + StartServiceW(no arguments)
 *   stop        OpenServiceW(SERVICE_STOP) + ControlService(SERVICE_CONTROL_STOP)
 *   dependents  OpenServiceW(ENUMERATE_DEPENDENTS) + EnumDependentServicesW(SERVICE_STATE_ALL)
 *
 * Every call is synchronous on the JS thread (the SCM is a local RPC server, not a path or a device). The SCM answers queries at once; StartServiceW
 * returns once the service process has connected to the SCM, ControlService once the service's
 * control handler has returned — normally milliseconds, at most the SCM's own 30 s bound.
 *
 * QueryServiceConfigW and EnumDependentServicesW fill a caller buffer with structures whose string
 * pointers point into that same buffer; koffi passes a Buffer's memory as is, so the strings are
 * read at `pointer - koffi.address(buffer)` (checked to lie inside the buffer). x64 layout.
 */
import { CsiProxyError, Code } from "../errors.ts";
import { advapi32, type Advapi32 } from "../win32/advapi32.ts";
import { kernel32, type Kernel32 } from "../win32/kernel32.ts";
import { loadKoffi, type Koffi } from "../util/koffi-loader.ts";
import { utf16z } from "../win32/win32-calls.ts";
import { Win32Error, WinError } from "../win32/win32-errors.ts";

/** What the SCM reports about one service (dwStartType / dwCurrentState as Windows numbers them). */
export interface ScmServiceInfo {
  name: string;
  displayName: string;
  /** SERVICE_BOOT_START 0, SYSTEM 1, AUTO 2, DEMAND 3, DISABLED 4. */
  startType: number;
  /** SERVICE_STOPPED 1, START_PENDING 2, STOP_PENDING 3, RUNNING 4, CONTINUE_PENDING 5, PAUSE_PENDING 6, PAUSED 7. */
  state: number;
  /** lpLoadOrderGroup ("" when none). */
  group: string;
  /** lpDependencies: service names, and load-order groups prefixed with `+` (SC_GROUP_IDENTIFIER). */
  dependencies: string[];
}

/** The SCM operations the System host uses (a {@link Scm}, or a fake in tests). Failures throw {@link Win32Error}. */
export interface ServiceControlManager {
  /** The service, or null when no service has this name. */
  query(name: string): ScmServiceInfo | null;
  /** StartServiceW. */
  start(name: string): void;
  /** ControlService(SERVICE_CONTROL_STOP). */
  stop(name: string): void;
  /**
   * EnumDependentServicesW(SERVICE_STATE_ALL): every service that depends on `name`, directly or
   * not, in reverse start order (a valid stop order).
   */
  dependents(name: string): string[];
}

const SC_MANAGER_CONNECT = 0x1;
const SERVICE_QUERY_CONFIG = 0x1, SERVICE_QUERY_STATUS = 0x4, SERVICE_ENUMERATE_DEPENDENTS = 0x8, SERVICE_START = 0x10, SERVICE_STOP = 0x20;
const SC_STATUS_PROCESS_INFO = 0;
const SERVICE_CONTROL_STOP = 1;
const SERVICE_STATE_ALL = 3;
/**
 * The x64 layouts this file reads by hand (windows.h names; `sizeof` = the structure's size),
 * compared with MinGW-w64's windows.h by test/windows/win32-layout.test.ts.
 */
export const SCM_LAYOUT = {
  SERVICE_STATUS_PROCESS: { sizeof: 36, dwCurrentState: 4 },
  SERVICE_STATUS: { sizeof: 28 },
  ENUM_SERVICE_STATUSW: { sizeof: 48, lpServiceName: 0 },
  QUERY_SERVICE_CONFIGW: { dwStartType: 4, lpLoadOrderGroup: 24, lpDependencies: 40, lpDisplayName: 56 },
} as const;
const STATUS_PROCESS_SIZE = SCM_LAYOUT.SERVICE_STATUS_PROCESS.sizeof, STATUS_SIZE = SCM_LAYOUT.SERVICE_STATUS.sizeof, ENUM_STATUS_SIZE = SCM_LAYOUT.ENUM_SERVICE_STATUSW.sizeof;
const CONFIG = SCM_LAYOUT.QUERY_SERVICE_CONFIGW;

type Handle = unknown;

/** Reads the NUL-terminated UTF-16 string a pointer stored at `at` in `buf` points to (inside `buf`). */
export function stringAt(buf: Buffer, base: bigint, at: number, multi = false): string | string[] {
  const p = buf.readBigUInt64LE(at);
  if (p === 0n) return multi ? [] : "";
  const off = p - base;
  if (off < 0n || off >= BigInt(buf.length)) throw new CsiProxyError(Code.Internal, `SCM returned a string pointer outside its buffer (offset ${off})`);
  const rest = buf.subarray(Number(off));
  if (!multi) return utf16z(rest);
  const text = rest.toString("utf16le");
  const end = text.indexOf("\0\0");
  const body = end === -1 ? text : text.slice(0, end);
  return body.split("\0").filter((s) => s !== "");
}

/** QUERY_SERVICE_CONFIGW (x64) as filled by QueryServiceConfigW into `buf` at address `base`. */
export function parseServiceConfig(buf: Buffer, base: bigint): { startType: number; group: string; dependencies: string[]; displayName: string } {
  return {
    startType: buf.readUInt32LE(CONFIG.dwStartType),
    group: stringAt(buf, base, CONFIG.lpLoadOrderGroup) as string,
    dependencies: stringAt(buf, base, CONFIG.lpDependencies, true) as string[],
    displayName: stringAt(buf, base, CONFIG.lpDisplayName) as string,
  };
}

/** ENUM_SERVICE_STATUSW[count] (x64) as filled by EnumDependentServicesW: the service names. */
export function parseEnumServiceStatus(buf: Buffer, base: bigint, count: number): string[] {
  const names: string[] = [];
  for (let i = 0; i < count; i++) names.push(stringAt(buf, base, i * ENUM_STATUS_SIZE + SCM_LAYOUT.ENUM_SERVICE_STATUSW.lpServiceName) as string);
  return names;
}

export class Scm implements ServiceControlManager {
  readonly #koffi: Koffi;
  readonly #adv: Advapi32;
  readonly #k32: Kernel32;

  /** Uses the shared declarations of advapi32.ts (kind `scm`) and kernel32.ts. */
  constructor(koffi: Koffi) {
    this.#koffi = koffi;
    this.#adv = advapi32(koffi);
    this.#k32 = kernel32(koffi);
  }

  #lastError(): number {
    return this.#k32.GetLastError();
  }

  /** Runs `fn` with an open service handle; both handles are closed afterwards. */
  #withService<T>(name: string, access: number, fn: (h: Handle) => T): T {
    const scm = this.#adv.OpenSCManagerW(null, null, SC_MANAGER_CONNECT);
    if (!scm) throw new Win32Error("OpenSCManager", this.#lastError());
    try {
      const h = this.#adv.OpenServiceW(scm, name, access);
      if (!h) throw new Win32Error(`OpenService ${name}`, this.#lastError());
      try {
        return fn(h);
      } finally {
        this.#adv.CloseServiceHandle(h);
      }
    } finally {
      this.#adv.CloseServiceHandle(scm);
    }
  }

  /** A variable-size query: probe for the size (ERROR_INSUFFICIENT_BUFFER / ERROR_MORE_DATA), then fill. */
  #sized(what: string, query: (buf: Buffer | null, size: number, needed: number[]) => boolean): Buffer {
    let size = 0;
    for (let attempt = 0; attempt < 4; attempt++) {
      const buf = size > 0 ? Buffer.alloc(size) : null;
      const needed = [0];
      if (query(buf, size, needed)) return buf ?? Buffer.alloc(0);
      const err = this.#lastError();
      if (err !== WinError.INSUFFICIENT_BUFFER && err !== WinError.MORE_DATA) throw new Win32Error(what, err);
      size = Math.max(needed[0], size + 1);
    }
    throw new CsiProxyError(Code.Internal, `${what}: the result kept growing`);
  }

  query(name: string): ScmServiceInfo | null {
    try {
      return this.#withService(name, SERVICE_QUERY_CONFIG | SERVICE_QUERY_STATUS, (h) => {
        const status = Buffer.alloc(STATUS_PROCESS_SIZE);
        if (!this.#adv.QueryServiceStatusEx(h, SC_STATUS_PROCESS_INFO, status, STATUS_PROCESS_SIZE, [0])) {
          throw new Win32Error(`QueryServiceStatusEx ${name}`, this.#lastError());
        }
        let base = 0n;
        const config = this.#sized(`QueryServiceConfig ${name}`, (buf, size, needed) => {
          if (buf) base = this.#koffi.address(buf);
          return Boolean(this.#adv.QueryServiceConfigW(h, buf, size, needed));
        });
        const c = parseServiceConfig(config, base);
        return { name, displayName: c.displayName, startType: c.startType, state: status.readUInt32LE(SCM_LAYOUT.SERVICE_STATUS_PROCESS.dwCurrentState), group: c.group, dependencies: c.dependencies };
      });
    } catch (err) {
      if (err instanceof Win32Error && (err.errno === WinError.SERVICE_DOES_NOT_EXIST || err.errno === WinError.INVALID_NAME)) return null;
      throw err;
    }
  }

  start(name: string): void {
    this.#withService(name, SERVICE_START, (h) => {
      if (!this.#adv.StartServiceW(h, 0, null)) throw new Win32Error(`StartService ${name}`, this.#lastError());
    });
  }

  stop(name: string): void {
    this.#withService(name, SERVICE_STOP, (h) => {
      const status = Buffer.alloc(STATUS_SIZE);
      if (!this.#adv.ControlService(h, SERVICE_CONTROL_STOP, status)) throw new Win32Error(`ControlService(STOP) ${name}`, this.#lastError());
    });
  }

  dependents(name: string): string[] {
    return this.#withService(name, SERVICE_ENUMERATE_DEPENDENTS, (h) => {
      let base = 0n;
      let count = 0;
      const buf = this.#sized(`EnumDependentServices ${name}`, (b, size, needed) => {
        if (b) base = this.#koffi.address(b);
        const n = [0];
        const ok = Boolean(this.#adv.EnumDependentServicesW(h, SERVICE_STATE_ALL, b, size, needed, n));
        count = n[0];
        return ok;
      });
      return parseEnumServiceStatus(buf, base, count);
    });
  }
}

let scm: Promise<Scm> | undefined;

/** The process-wide SCM client (koffi loaded on first use). */
export function loadScm(): Promise<Scm> {
  scm ??= loadKoffi().then((koffi) => new Scm(koffi));
  return scm;
}
