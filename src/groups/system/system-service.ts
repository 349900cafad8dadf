import type { SystemService } from "./types.ts";
import { callSignal, inCallScope } from "../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../util/stop-if-aborted.ts";
import { ServiceStatus } from "./types.ts";
import type { SystemHostApi } from "./host-api.ts";
import { CsiProxyError, Code, failedPrecondition, invalidArgument, notFound, permissionDenied } from "../../errors.ts";

export interface SystemServiceDeps {
  host: SystemHostApi;
  platform: "linux" | "win32";
  /**
   * Services StartService/StopService may act on (`-allowed-service`); `*` allows any (upstream's
   * behaviour). Empty: none. GetService is never restricted.
   */
  allowedServices: readonly string[];
  /** Poll interval and bound while waiting for a service state (upstream: 200 ms, 30 s). */
  pollIntervalMs?: number;
  waitTimeoutMs?: number;
}

const quote = (s: string) => JSON.stringify(s.length > 100 ? `${s.slice(0, 100)}...` : s);
/** systemd unit names: letters, digits, `:_.@-` (no `\` escapes accepted), optional `.service`. */
const LINUX_NAME = /^[A-Za-z0-9_][A-Za-z0-9:_.@-]{0,247}$/;
/** Windows service names: up to 256 characters, none of `/ \` (SCM rules), no quotes or backticks, no control characters. */
const WINDOWS_NAME = /^[^\x00-\x1f\x7f/\\'"`]{1,256}$/;

/**
 * The System group (docs/upstream-behaviour.md, System) with an allow-list for starting and stopping.
 * - GetBIOSSerialNumber: the host's value, trimmed; a host without SMBIOS data is
 *   FailedPrecondition, an empty serial NotFound.
 * - GetService: NotFound (upstream's text) for an unknown service.
 * - StartService/StopService: the name must be on the allow-list (PermissionDenied otherwise,
 *   checked before the service is even looked up). Start is a no-op when Running, else starts and
 *   polls until Running (DeadlineExceeded after the bound, upstream's text). Stop is a no-op when
 *   Stopped; running dependents (transitively) make it FailedPrecondition without `force`; with
 *   `force` they are stopped first, deepest first, each of them needing the allow-list too.
 * Names are validated for the platform first (InvalidArgument): empty, too long, path separators,
 * quotes, control characters, and on Linux anything outside systemd's unit-name characters.
 */
export function createSystemService(deps: SystemServiceDeps): SystemService {
  const { host, platform } = deps;
  const pollMs = deps.pollIntervalMs ?? 200;
  const waitMs = deps.waitTimeoutMs ?? 30_000;
  const canonical = (name: string) => (platform === "win32" ? name.toLowerCase() : name.replace(/\.service$/, ""));
  const allowAll = deps.allowedServices.includes("*");
  const allowed = new Set(deps.allowedServices.map(canonical));

  function checkName(name: string): string {
    if (name === "") throw invalidArgument("service name is required");
    const ok = platform === "win32" ? WINDOWS_NAME.test(name) && name.trim() === name : LINUX_NAME.test(name);
    if (!ok) throw invalidArgument(`invalid service name ${quote(name)}`);
    return name;
  }

  function checkAllowed(name: string, verb: string): void {
    if (allowAll || allowed.has(canonical(name))) return;
    throw permissionDenied(`${verb} service ${name} is not allowed: it is not listed in -allowed-service`);
  }

  async function lookUp(name: string) {
    const svc = await host.getService(name);
    if (!svc) throw notFound(`failed to get service ${name}. error: failed to query service ${name}: not found`);
    return svc;
  }

  /** Polls every `pollMs` until `name` has `status`; an aborted call stops polling (saying `done`), else DeadlineExceeded after `waitMs`. */
  async function waitFor(name: string, status: ServiceStatus, word: string, done: string): Promise<void> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      stopIfAborted(callSignal(), { before: `waiting for service ${name} to become ${word}`, done });
      if ((await lookUp(name)).status === status) return;
      if (Date.now() >= deadline) throw new CsiProxyError(Code.DeadlineExceeded, `timed out waiting for service ${name} to become ${word}`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** Running services that depend on `name`, transitively, in breadth-first order (nearest first). */
  async function runningDependents(name: string): Promise<string[]> {
    const seen = new Set([canonical(name)]);
    const order: string[] = [];
    const queue = [name];
    while (queue.length) {
      for (const dep of await host.getDependentServices(queue.shift()!)) {
        if (seen.has(canonical(dep))) continue;
        seen.add(canonical(dep));
        const svc = await host.getService(dep);
        if (svc && svc.status !== ServiceStatus.Stopped) {
          order.push(dep);
          queue.push(dep);
        }
      }
    }
    return order;
  }

  return inCallScope({
    async getBIOSSerialNumber() {
      const serial = await host.getBIOSSerialNumber();
      if (serial === null) throw failedPrecondition("this machine exposes no BIOS serial number (no SMBIOS/DMI data)");
      const trimmed = serial.trim();
      if (trimmed === "") throw notFound("the BIOS serial number is empty");
      return { serialNumber: trimmed };
    },

    async getService({ name }) {
      return lookUp(checkName(name));
    },

    async startService({ name }) {
      checkAllowed(checkName(name), "starting");
      if ((await lookUp(name)).status === ServiceStatus.Running) return;
      await host.startService(name);
      await waitFor(name, ServiceStatus.Running, "running", `service ${name} was asked to start and may still be starting`);
    },

    async stopService({ name, force }) {
      checkAllowed(checkName(name), "stopping");
      if ((await lookUp(name)).status === ServiceStatus.Stopped) return;
      const dependents = await runningDependents(name);
      if (dependents.length && !force) {
        throw failedPrecondition(`service ${name} has running dependent services (${dependents.join(", ")}); stop them first or use force`);
      }
      for (const dep of dependents) {
        if (!allowAll && !allowed.has(canonical(dep))) {
          throw permissionDenied(`stopping ${name} needs stopping its dependent service ${dep}, which is not listed in -allowed-service`);
        }
      }
      const stopped: string[] = [];
      const soFar = () => (stopped.length ? `dependent services ${stopped.join(", ")} were stopped` : NOTHING_CHANGED);
      for (const svc of [...[...dependents].reverse(), name]) {
        stopIfAborted(callSignal(), { before: `stopping service ${svc}`, done: soFar() });
        await host.stopService(svc);
        const asked = `service ${svc} was asked to stop and may still be stopping`;
        await waitFor(svc, ServiceStatus.Stopped, "stopped", stopped.length ? `${soFar()}; ${asked}` : asked);
        stopped.push(svc);
      }
    },
  });
}
