/**
 * What the daemon may do on this host: its effective uid and the capabilities in its effective set
 * (/proc/self/status CapEff). Reads only; the services decide what a missing privilege refuses.
 */
import { readFile } from "node:fs/promises";

export interface Privileges {
  /** The daemon's effective uid (0 = root). Synchronous. */
  effectiveUid(): number;
  /** Capabilities in the effective set, by name ("CAP_SYS_RESOURCE"…), read from /proc/self/status. */
  effectiveCapabilities(): Promise<Set<string>>;
}

/** Linux capability numbers (linux/capability.h) → names. */
const CAPABILITIES = [
  "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
  "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
  "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN",
  "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
  "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
  "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
];

/** Names of the capabilities set in a CapEff hex mask. */
export function capabilityNames(hexMask: string): Set<string> {
  const mask = BigInt(`0x${hexMask.trim() || "0"}`);
  return new Set(CAPABILITIES.filter((_, bit) => (mask >> BigInt(bit)) & 1n));
}

/** This process's privileges. */
export function createPrivileges(): Privileges {
  return {
    effectiveUid: () => process.geteuid?.() ?? 0,
    async effectiveCapabilities() {
      const status = await readFile("/proc/self/status", "utf8");
      return capabilityNames(/^CapEff:\s*([0-9a-fA-F]+)/m.exec(status)?.[1] ?? "0");
    },
  };
}
