import type { SystemHostApi } from "../../src/groups/system/host-api.ts";
import { ServiceStatus, StartType } from "../../src/groups/system/types.ts";
import { notFound } from "../../src/errors.ts";

interface FakeService {
  displayName: string;
  startType: StartType;
  status: ServiceStatus;
  /** Services that depend on this one. */
  dependents: string[];
  /** Polls (getService calls) a start/stop stays pending before it completes; Infinity = never. */
  pendingPolls: number;
  pending?: { target: ServiceStatus; polls: number };
}

/**
 * In-memory service manager and BIOS for unit tests. Starting/stopping moves a service to the
 * pending state and completes after `pendingPolls` further getService calls, like an SCM whose
 * services take a while. `calls` records every call in order.
 */
export class FakeSystemHost implements SystemHostApi {
  biosSerial: string | null = "VMware-42 1a 2b 3c";
  readonly services = new Map<string, FakeService>();
  readonly calls: string[] = [];

  addService(name: string, options: Partial<Omit<FakeService, "pending">> = {}): this {
    this.services.set(name, {
      displayName: options.displayName ?? `${name} display`,
      startType: options.startType ?? StartType.Manual,
      status: options.status ?? ServiceStatus.Stopped,
      dependents: options.dependents ?? [],
      pendingPolls: options.pendingPolls ?? 1,
    });
    return this;
  }

  async getBIOSSerialNumber() {
    this.calls.push("getBIOSSerialNumber");
    return this.biosSerial;
  }
  async getService(name: string) {
    this.calls.push(`getService ${name}`);
    const s = this.services.get(name);
    if (!s) return null;
    if (s.pending) {
      if (s.pending.polls <= 0) {
        s.status = s.pending.target;
        s.pending = undefined;
      } else s.pending.polls--;
    }
    return { displayName: s.displayName, startType: s.startType, status: s.status };
  }
  async startService(name: string) {
    this.calls.push(`startService ${name}`);
    const s = this.services.get(name);
    if (!s) throw notFound(`service ${name}: not found`);
    s.status = ServiceStatus.StartPending;
    s.pending = { target: ServiceStatus.Running, polls: s.pendingPolls };
  }
  async stopService(name: string) {
    this.calls.push(`stopService ${name}`);
    const s = this.services.get(name);
    if (!s) throw notFound(`service ${name}: not found`);
    s.status = ServiceStatus.StopPending;
    s.pending = { target: ServiceStatus.Stopped, polls: s.pendingPolls };
  }
  async getDependentServices(name: string) {
    this.calls.push(`getDependentServices ${name}`);
    return [...(this.services.get(name)?.dependents ?? [])];
  }
}
