/**
 * `-windows-service`: runs csi-proxy under the Service Control Manager, in process, through koffi
 * (advapi32), the way Go's `svc.Run` does for upstream:
 *
 *   StartServiceCtrlDispatcherW  runs on a koffi `.async` worker thread (it blocks until the service
 *                                is STOPPED); ServiceMain and HandlerEx are koffi-registered
 *                                callbacks, which koffi runs on the JS thread;
 *   ServiceMain                  RegisterServiceCtrlHandlerExW, START_PENDING, start serving,
 *                                RUNNING (accepting STOP and SHUTDOWN) or, on failure, STOPPED with
 *                                a service-specific exit code;
 *   HandlerEx                    STOP / SHUTDOWN: STOP_PENDING, stop serving (pipes closed,
 *                                connections ended — upstream leaves its servers running), STOPPED;
 *                                INTERROGATE: reports the current status again; anything else:
 *                                ERROR_CALL_NOT_IMPLEMENTED.
 *
 * The SCM may end the process as soon as STOPPED is reported, so `stop` must have flushed the logs
 * before it resolves.
 */
import { advapi32 } from "../win32/advapi32.ts";
import { kernel32 } from "../win32/kernel32.ts";
import { loadKoffi, type Koffi } from "../util/koffi-loader.ts";

export const SERVICE_NAME = "csiproxy";

const SERVICE_WIN32_OWN_PROCESS = 0x10;
export const ServiceState = { STOPPED: 1, START_PENDING: 2, STOP_PENDING: 3, RUNNING: 4 } as const;
export const ServiceControl = { STOP: 1, INTERROGATE: 4, SHUTDOWN: 5 } as const;
const SERVICE_ACCEPT_STOP = 0x1, SERVICE_ACCEPT_SHUTDOWN = 0x4;
const NO_ERROR = 0, ERROR_CALL_NOT_IMPLEMENTED = 120, ERROR_SERVICE_SPECIFIC_ERROR = 1066;

export interface ServiceHooks {
  /** Starts serving; resolves once every endpoint listens. */
  start(): Promise<void>;
  /** Stops serving and flushes logs; resolves when nothing more needs to run. */
  stop(reason: "stop" | "shutdown"): Promise<void>;
  /** Diagnostics (state changes, controls); must not block. */
  log(msg: string): void;
}

/** What the SCM is told: the state machine of ServiceMain/HandlerEx, kept apart from koffi for tests. */
export interface StatusReporter {
  report(state: number, accepts: number, exitCode?: { win32: number; specific: number }): void;
}

/**
 * While a stop runs, STOP_PENDING is reported again this often (ms), each time with the next
 * checkpoint, inside the 30 s wait hint: the SCM sees a stop that waits for a Format or Resize
 * (at most 15 min, powershell/daemon-pools.ts) progressing, not hung.
 */
export const STOP_CHECKPOINT_MS = 10_000;

/**
 * The service's control logic (no FFI): ServiceMain → `main()`, HandlerEx → `control(code)`
 * (returns HandlerEx's return value). Exposed for unit tests (`checkpointMs`: {@link STOP_CHECKPOINT_MS}).
 */
export function createServiceController(hooks: ServiceHooks, reporter: StatusReporter, options: { checkpointMs?: number } = {}) {
  let state: number = ServiceState.STOPPED;
  let accepts = 0;
  let exitCode = { win32: NO_ERROR, specific: 0 };
  let stopping: Promise<void> | undefined;
  const set = (s: number, a = 0) => {
    state = s;
    accepts = a;
    reporter.report(s, a, exitCode);
    hooks.log(`service state ${Object.entries(ServiceState).find(([, v]) => v === s)?.[0] ?? s}`);
  };
  const stop = (reason: "stop" | "shutdown") => {
    stopping ??= (async () => {
      set(ServiceState.STOP_PENDING);
      const checkpoints = setInterval(() => reporter.report(ServiceState.STOP_PENDING, 0, exitCode), options.checkpointMs ?? STOP_CHECKPOINT_MS);
      try {
        await hooks.stop(reason);
      } catch (err) {
        hooks.log(`stopping failed: ${(err as Error)?.message ?? err}`);
        exitCode = { win32: ERROR_SERVICE_SPECIFIC_ERROR, specific: 2 };
      } finally {
        clearInterval(checkpoints);
      }
      set(ServiceState.STOPPED);
    })();
    return stopping;
  };
  return {
    get state() {
      return state;
    },
    /** True when starting or stopping failed (reported to the SCM as exit code 1066). */
    get failed() {
      return exitCode.win32 !== NO_ERROR;
    },
    /** ServiceMain: START_PENDING → start → RUNNING, or STOPPED with exit code 1066 and the error's `serviceExitCode` (default 1). */
    async main(): Promise<void> {
      set(ServiceState.START_PENDING);
      try {
        await hooks.start();
      } catch (err) {
        hooks.log(`starting failed: ${(err as Error)?.message ?? err}`);
        // 1: a runtime failure; an error may carry its class (2: configuration) as `serviceExitCode`.
        exitCode = { win32: ERROR_SERVICE_SPECIFIC_ERROR, specific: (err as { serviceExitCode?: number })?.serviceExitCode ?? 1 };
        await hooks.stop("stop").catch(() => {});
        set(ServiceState.STOPPED);
        return;
      }
      if (stopping) return; // a STOP arrived while starting; it finishes the job
      set(ServiceState.RUNNING, SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN);
    },
    /** HandlerEx: returns NO_ERROR or ERROR_CALL_NOT_IMPLEMENTED. Never blocks. */
    control(code: number): number {
      hooks.log(`service control ${code}`);
      switch (code) {
        case ServiceControl.STOP:
        case ServiceControl.SHUTDOWN:
          void stop(code === ServiceControl.SHUTDOWN ? "shutdown" : "stop");
          return NO_ERROR;
        case ServiceControl.INTERROGATE:
          reporter.report(state, accepts, exitCode);
          return NO_ERROR;
        default:
          return ERROR_CALL_NOT_IMPLEMENTED;
      }
    },
  };
}

/** The declarations service mode uses: advapi32.ts's (kind `service`) and GetLastError (kernel32.ts). */
export function serviceApi(koffi: Koffi) {
  const { SERVICE_STATUS, ServiceMainProc, HandlerExProc, SERVICE_TABLE, StartServiceCtrlDispatcherW, RegisterServiceCtrlHandlerExW, SetServiceStatus } = advapi32(koffi);
  return { SERVICE_STATUS, ServiceMainProc, HandlerExProc, TABLE: SERVICE_TABLE, StartServiceCtrlDispatcherW, RegisterServiceCtrlHandlerExW, SetServiceStatus, GetLastError: kernel32(koffi).GetLastError };
}

/**
 * Runs as the `csiproxy` service until the SCM stops it. Resolves with the process exit code (0
 * after a clean stop). Rejects when the process was not started by the SCM (upstream behaves the
 * same: `-windows-service` from a console is an error).
 */
export async function runService(hooks: ServiceHooks, name = SERVICE_NAME): Promise<number> {
  const koffi = await loadKoffi();
  const { ServiceMainProc, HandlerExProc, StartServiceCtrlDispatcherW, RegisterServiceCtrlHandlerExW, SetServiceStatus, GetLastError } = serviceApi(koffi);

  let statusHandle: unknown = null;
  let checkPoint = 0;
  const reporter: StatusReporter = {
    report(state, accepts, exitCode) {
      if (!statusHandle) return;
      const pending = state === ServiceState.START_PENDING || state === ServiceState.STOP_PENDING;
      const ok = SetServiceStatus(statusHandle, {
        dwServiceType: SERVICE_WIN32_OWN_PROCESS,
        dwCurrentState: state,
        dwControlsAccepted: accepts,
        dwWin32ExitCode: exitCode?.win32 ?? NO_ERROR,
        dwServiceSpecificExitCode: exitCode?.specific ?? 0,
        dwCheckPoint: pending ? ++checkPoint : 0,
        dwWaitHint: pending ? 30_000 : 0,
      });
      if (!ok) hooks.log(`SetServiceStatus(${state}) failed: win32 error ${GetLastError()}`);
    },
  };
  const controller = createServiceController(hooks, reporter);

  const handlerEx = koffi.register((control: number) => controller.control(control), koffi.pointer(HandlerExProc));
  const serviceMain = koffi.register(() => {
    statusHandle = RegisterServiceCtrlHandlerExW(name, handlerEx, null);
    if (!statusHandle) {
      hooks.log(`RegisterServiceCtrlHandlerExW failed: win32 error ${GetLastError()}`);
      return;
    }
    void controller.main();
  }, koffi.pointer(ServiceMainProc));

  try {
    const ok = await new Promise<number>((resolve, reject) => {
      StartServiceCtrlDispatcherW.async({ entry: { lpServiceName: name, lpServiceProc: serviceMain }, end: { lpServiceName: null, lpServiceProc: null } }, (err: unknown, result: number) =>
        err ? reject(err) : resolve(result),
      );
    });
    if (!ok) {
      throw new Error(
        "-windows-service: StartServiceCtrlDispatcher failed; csi-proxy must be started by the Service Control Manager (sc.exe start csiproxy), not from a console",
      );
    }
  } finally {
    koffi.unregister(serviceMain);
    koffi.unregister(handlerEx);
  }
  return controller.state === ServiceState.STOPPED && !controller.failed ? 0 : 1;
}
