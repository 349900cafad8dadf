import type { CallOptions, NoRequest } from "../../util/call-scope.ts";
/** Numbered as the wire enum StartType. */
export const StartType = { Boot: 0, System: 1, Automatic: 2, Manual: 3, Disabled: 4 } as const;
export type StartType = (typeof StartType)[keyof typeof StartType];

/** Numbered as the wire enum ServiceStatus. */
export const ServiceStatus = {
  Unknown: 0, Stopped: 1, StartPending: 2, StopPending: 3, Running: 4, ContinuePending: 5, PausePending: 6, Paused: 7,
} as const;
export type ServiceStatus = (typeof ServiceStatus)[keyof typeof ServiceStatus];

/** Version-agnostic system API. Unknown services are NotFound; services outside the allow-list PermissionDenied. */
export interface SystemService {
  getBIOSSerialNumber(req?: NoRequest, options?: CallOptions): Promise<{ serialNumber: string }>;
  getService(req: { name: string }, options?: CallOptions): Promise<{ displayName: string; startType: StartType; status: ServiceStatus }>;
  /** Starts the service and waits until it runs; idempotent. */
  startService(req: { name: string }, options?: CallOptions): Promise<void>;
  /** Stops the service and waits until it stopped; with force, running dependents are stopped first. Idempotent. */
  stopService(req: { name: string; force: boolean }, options?: CallOptions): Promise<void>;
}
