/**
 * The System group on Linux:
 * - BIOS serial number: DMI in sysfs, `/sys/class/dmi/id/product_serial` (SMBIOS type 1 "System
 *   Information" serial, what Windows' CIM_BIOSElement.SerialNumber reports on VMs and most
 *   hardware); root-only readable. No DMI directory at all (containers, Firecracker, some ARM
 *   boards) → null.
 * - Services: systemd units `<name>.service` through systemctl (`show`, `start`, `stop`; start and
 *   stop wait for systemd's job to finish). Only where systemd is the running init (sd_booted():
 *   /run/systemd/system exists); elsewhere every service call is FailedPrecondition, because no
 *   service manager can be asked.
 * Pass-through per host-api.ts.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { SystemHostApi } from "../../groups/system/host-api.ts";
import { ServiceStatus, StartType } from "../../groups/system/types.ts";
import { CsiProxyError, Code } from "../../errors.ts";
import { HostCommandError, runCommand } from "../exec/run-command.ts";
import { fsError } from "../fs-error.ts";

export interface LinuxSystemHostOptions {
  /** DMI id directory (default /sys/class/dmi/id). */
  dmiDir?: string;
  /** The systemctl program (default `systemctl`). */
  systemctl?: string;
  /** sd_booted() marker (default /run/systemd/system). */
  systemdMarker?: string;
  /** Bound for one systemctl run (default 90 s, systemd's default job timeout). */
  timeoutMs?: number;
}

/** `systemctl show` key=value lines → map. */
export function parseShow(stdout: string): Map<string, string> {
  const props = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) props.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return props;
}

/** systemd ActiveState → the wire's ServiceStatus. */
export function statusOf(activeState: string): ServiceStatus {
  switch (activeState) {
    case "active":
    case "reloading":
      return ServiceStatus.Running;
    case "inactive":
    case "failed":
      return ServiceStatus.Stopped;
    case "activating":
      return ServiceStatus.StartPending;
    case "deactivating":
      return ServiceStatus.StopPending;
    default:
      return ServiceStatus.Unknown;
  }
}

/** systemd UnitFileState → the wire's StartType (enabled ≈ Automatic, masked ≈ Disabled, the rest start on demand ≈ Manual). */
export function startTypeOf(unitFileState: string): StartType {
  if (unitFileState.startsWith("enabled") || unitFileState === "linked" || unitFileState === "linked-runtime") return StartType.Automatic;
  if (unitFileState.startsWith("masked")) return StartType.Disabled;
  return StartType.Manual;
}

const unitOf = (name: string) => (name.endsWith(".service") ? name : `${name}.service`);

export class LinuxSystemHost implements SystemHostApi {
  readonly #dmiDir: string;
  readonly #systemctl: string;
  readonly #marker: string;
  readonly #timeoutMs: number;

  constructor(options: LinuxSystemHostOptions = {}) {
    this.#dmiDir = options.dmiDir ?? "/sys/class/dmi/id";
    this.#systemctl = options.systemctl ?? "systemctl";
    this.#marker = options.systemdMarker ?? "/run/systemd/system";
    this.#timeoutMs = options.timeoutMs ?? 90_000;
  }

  async getBIOSSerialNumber(): Promise<string | null> {
    const file = path.join(this.#dmiDir, "product_serial");
    try {
      return await fs.readFile(file, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      if (code === "EACCES" || code === "EPERM") throw new CsiProxyError(Code.PermissionDenied, `reading ${file} needs root`, { cause: err });
      throw fsError(err, "read", file);
    }
  }

  async #requireSystemd(): Promise<void> {
    try {
      await fs.stat(this.#marker);
    } catch {
      const init = (await fs.readFile("/proc/1/comm", "utf8").catch(() => "unknown")).trim();
      throw new CsiProxyError(
        Code.FailedPrecondition,
        `no service manager: systemd is not running on this machine (${this.#marker} is missing; PID 1 is ${init}), so services cannot be queried, started or stopped`,
      );
    }
  }

  async #run(args: string[]) {
    try {
      return await runCommand(this.#systemctl, args, { timeoutMs: this.#timeoutMs });
    } catch (err) {
      if (!(err instanceof HostCommandError)) throw err;
      const code =
        err.exitCode === null ? (err.timedOut ? Code.DeadlineExceeded : Code.FailedPrecondition)
        : /not found|not loaded/i.test(err.stderr) ? Code.NotFound
        : /access denied|interactive authentication required/i.test(err.stderr) ? Code.PermissionDenied
        : /^Job for .* failed/m.test(err.stderr) ? Code.FailedPrecondition
        : err.code;
      throw new CsiProxyError(code, err.message, { cause: err });
    }
  }

  async getService(name: string) {
    await this.#requireSystemd();
    const { stdout } = await this.#run(["show", "--property=LoadState,ActiveState,UnitFileState,Description", "--", unitOf(name)]);
    const props = parseShow(stdout);
    if (props.get("LoadState") === "not-found") return null;
    return {
      displayName: props.get("Description") ?? "",
      startType: startTypeOf(props.get("UnitFileState") ?? ""),
      status: statusOf(props.get("ActiveState") ?? ""),
    };
  }

  async startService(name: string): Promise<void> {
    await this.#requireSystemd();
    await this.#run(["start", "--", unitOf(name)]);
  }

  async stopService(name: string): Promise<void> {
    await this.#requireSystemd();
    await this.#run(["stop", "--", unitOf(name)]);
  }

  async getDependentServices(name: string): Promise<string[]> {
    await this.#requireSystemd();
    // Units that systemd stops together with this one: RequiredBy= and BoundBy= (reverse of Requires=/BindsTo=).
    const { stdout } = await this.#run(["show", "--property=RequiredBy,BoundBy", "--", unitOf(name)]);
    const props = parseShow(stdout);
    const units = [props.get("RequiredBy") ?? "", props.get("BoundBy") ?? ""].join(" ").split(/\s+/).filter((u) => u.endsWith(".service"));
    return [...new Set(units.map((u) => u.slice(0, -".service".length)))];
  }
}
