/**
 * The advapi32.dll functions csi-proxy calls, declared once per koffi instance with their kind
 * (binding.ts): security descriptors and SIDs, the process token, the Service Control Manager as a
 * client (scm.ts) and service mode (service.ts). Prototypes are compiled against MinGW-w64's
 * windows.h by test/windows/win32-layout.test.ts.
 */
import { io, oncePerKoffi, sync } from "./binding.ts";
import type { Handle } from "./kernel32.ts";
import type { Koffi } from "../util/koffi-loader.ts";
import { win32Types } from "./win32-structs.ts";

/** An out-parameter koffi fills (`_Out_ void **`, `_Out_ uint32_t *`, …): a one-element array. */
type Out<T> = T[];
type Ptr = unknown;

export const advapi32 = oncePerKoffi((koffi: Koffi) => {
  const adv = koffi.load("advapi32.dll");
  const mem = <A extends unknown[], R>(proto: string) => sync<A, R, "mem">("mem", adv, proto);
  const scm = <A extends unknown[], R>(proto: string) => sync<A, R, "scm">("scm", adv, proto);
  const svc = <A extends unknown[], R>(proto: string) => sync<A, R, "service">("service", adv, proto);
  // service mode's callback prototypes and dispatch table (one entry and the NULL entry that ends it)
  const { SERVICE_STATUS, SERVICE_TABLE_ENTRYW } = win32Types(koffi);
  const ServiceMainProc = koffi.proto("void __stdcall CsiProxyServiceMain(uint32_t argc, void *argv)");
  const HandlerExProc = koffi.proto("uint32_t __stdcall CsiProxyHandlerEx(uint32_t control, uint32_t eventType, void *eventData, void *context)");
  const SERVICE_TABLE = koffi.struct("CSIPROXY_SERVICE_TABLE", { entry: SERVICE_TABLE_ENTRYW, end: SERVICE_TABLE_ENTRYW });
  return {
    // security descriptors and SIDs
    ConvertStringSecurityDescriptorToSecurityDescriptorW: mem<[sddl: string, revision: number, sd: Out<Ptr>, size: Out<number>], number>("int __stdcall ConvertStringSecurityDescriptorToSecurityDescriptorW(const char16_t *sddl, uint32_t revision, _Out_ void **sd, _Out_ uint32_t *size)"),
    GetSecurityDescriptorDacl: mem<[sd: Ptr, present: Out<number>, dacl: Out<Ptr>, defaulted: Out<number>], number>("int __stdcall GetSecurityDescriptorDacl(void *sd, _Out_ int *present, _Out_ void **dacl, _Out_ int *defaulted)"),
    SetSecurityInfo: mem<[h: Handle, type: number, info: number, owner: Ptr, group: Ptr, dacl: Ptr, sacl: Ptr], number>("uint32_t __stdcall SetSecurityInfo(intptr_t h, int type, uint32_t info, void *owner, void *group, void *dacl, void *sacl)"),
    GetSecurityInfo: mem<[h: Handle, type: number, info: number, owner: Out<Ptr>, group: Out<Ptr>, dacl: Out<Ptr>, sacl: Out<Ptr>, sd: Out<Ptr>], number>("uint32_t __stdcall GetSecurityInfo(intptr_t h, int type, uint32_t info, _Out_ void **owner, _Out_ void **group, _Out_ void **dacl, _Out_ void **sacl, _Out_ void **sd)"),
    ConvertSecurityDescriptorToStringSecurityDescriptorW: mem<[sd: Ptr, revision: number, info: number, str: Out<Ptr>, len: Out<number>], number>("int __stdcall ConvertSecurityDescriptorToStringSecurityDescriptorW(void *sd, uint32_t revision, uint32_t info, _Out_ void **str, _Out_ uint32_t *len)"),
    SetFileSecurityW: io<[name: string, info: number, sd: Ptr], number>(adv, "int __stdcall SetFileSecurityW(const char16_t *name, uint32_t info, void *sd)"),
    GetNamedSecurityInfoW: io<[name: string, type: number, info: number, owner: Out<Ptr>, group: Out<Ptr>, dacl: Out<Ptr>, sacl: Out<Ptr>, sd: Out<Ptr>], number>(adv, "uint32_t __stdcall GetNamedSecurityInfoW(const char16_t *name, int type, uint32_t info, _Out_ void **owner, _Out_ void **group, _Out_ void **dacl, _Out_ void **sacl, _Out_ void **sd)"),
    GetSecurityDescriptorOwner: mem<[sd: Ptr, owner: Out<Ptr>, defaulted: Out<number>], number>("int __stdcall GetSecurityDescriptorOwner(void *sd, _Out_ void **owner, _Out_ int *defaulted)"),
    ConvertSidToStringSidW: mem<[sid: Ptr, str: Out<Ptr>], number>("int __stdcall ConvertSidToStringSidW(void *sid, _Out_ void **str)"),
    ConvertStringSidToSidW: mem<[str: string, sid: Out<Ptr>], number>("int __stdcall ConvertStringSidToSidW(const char16_t *str, _Out_ void **sid)"),
    LookupAccountSidW: io<[system: null, sid: Ptr, name: Buffer, nameLen: Out<number>, domain: Buffer, domainLen: Out<number>, use: Out<number>], number>(adv, "int __stdcall LookupAccountSidW(void *system, void *sid, _Out_ uint8_t *name, _Inout_ uint32_t *nameLen, _Out_ uint8_t *domain, _Inout_ uint32_t *domainLen, _Out_ int *use)"),
    // the process token
    OpenProcessToken: mem<[process: Handle, access: number, token: Out<Handle>], number>("int __stdcall OpenProcessToken(intptr_t process, uint32_t access, _Out_ intptr_t *token)"),
    GetTokenInformation: mem<[token: Handle, cls: number, info: Buffer, len: number, returned: Out<number>], number>("int __stdcall GetTokenInformation(intptr_t token, int cls, _Out_ uint8_t *info, uint32_t len, _Out_ uint32_t *returned)"),
    // the Service Control Manager as a client
    OpenSCManagerW: scm<[machine: null, database: null, access: number], Ptr>("void * __stdcall OpenSCManagerW(const char16_t *machine, const char16_t *database, uint32_t access)"),
    OpenServiceW: scm<[scm: Ptr, name: string, access: number], Ptr>("void * __stdcall OpenServiceW(void *scm, const char16_t *name, uint32_t access)"),
    CloseServiceHandle: scm<[h: Ptr], number>("int __stdcall CloseServiceHandle(void *h)"),
    QueryServiceStatusEx: scm<[h: Ptr, level: number, buf: Buffer, size: number, needed: Out<number>], number>("int __stdcall QueryServiceStatusEx(void *h, int level, uint8_t *buf, uint32_t size, _Out_ uint32_t *needed)"),
    // the buffers are plain `uint8_t *` (not _Out_): the API stores pointers into the very memory it was given
    QueryServiceConfigW: scm<[h: Ptr, buf: Buffer | null, size: number, needed: Out<number>], number>("int __stdcall QueryServiceConfigW(void *h, uint8_t *buf, uint32_t size, _Out_ uint32_t *needed)"),
    StartServiceW: scm<[h: Ptr, argc: number, argv: null], number>("int __stdcall StartServiceW(void *h, uint32_t argc, void *argv)"),
    ControlService: scm<[h: Ptr, control: number, status: Buffer], number>("int __stdcall ControlService(void *h, uint32_t control, uint8_t *status)"),
    EnumDependentServicesW: scm<[h: Ptr, state: number, buf: Buffer | null, size: number, needed: Out<number>, count: Out<number>], number>("int __stdcall EnumDependentServicesW(void *h, uint32_t state, uint8_t *buf, uint32_t size, _Out_ uint32_t *needed, _Out_ uint32_t *count)"),
    // service mode
    SERVICE_STATUS,
    ServiceMainProc,
    HandlerExProc,
    SERVICE_TABLE,
    StartServiceCtrlDispatcherW: svc<[table: unknown], number>("int __stdcall StartServiceCtrlDispatcherW(CSIPROXY_SERVICE_TABLE *table)"),
    RegisterServiceCtrlHandlerExW: svc<[name: string, proc: unknown, context: null], Ptr>("void * __stdcall RegisterServiceCtrlHandlerExW(const char16_t *name, CsiProxyHandlerEx *proc, void *context)"),
    SetServiceStatus: svc<[handle: Ptr, status: Record<string, number>], number>("int __stdcall SetServiceStatus(void *handle, SERVICE_STATUS *status)"),
  };
});

export type Advapi32 = ReturnType<typeof advapi32>;
