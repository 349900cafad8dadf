import type { ServiceStatus, StartType } from "./types.ts";

/**
 * Host operations of the System group. Implementations are pass-through: no validation, no
 * decisions (the allow-list, idempotency, waiting for a state, the dependents walk live in
 * system-service.ts). Service names are already validated for the platform.
 *
 * Windows maps this onto CIM_BIOSElement and Win32_Service (StartService/StopService,
 * Win32_DependentService); Linux onto DMI in sysfs and systemd's systemctl.
 */
export interface SystemHostApi {
  /** The system (SMBIOS type 1) serial number as the host reports it; null when the host has no SMBIOS data at all. */
  getBIOSSerialNumber(): Promise<string | null>;
  /** The service, or null when no such service exists. */
  getService(name: string): Promise<{ displayName: string; startType: StartType; status: ServiceStatus } | null>;
  /** Asks the service manager to start the service; returns once the request was accepted (or, on Linux, carried out). */
  startService(name: string): Promise<void>;
  /** Asks the service manager to stop the service; returns once the request was accepted (or carried out). */
  stopService(name: string): Promise<void>;
  /** Names of the services that depend on `name` directly (that must stop before it can). */
  getDependentServices(name: string): Promise<string[]>;
}
