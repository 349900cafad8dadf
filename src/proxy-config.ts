/** What the daemon is configured with (from flags, or given directly by a library user). */
export interface ProxyConfig {
  platform: "linux" | "win32";
  kubeletPath: string;
  workingDirs: string[];
  /** Linux only: where the endpoints' Unix sockets live. */
  socketDir: string;
  /** SMB mappings demand encryption. */
  requirePrivacy: boolean;
  /** Linux: filesystem FormatVolume creates ("ext4" or "xfs"). Windows always formats NTFS. */
  defaultFsType: "ext4" | "xfs";
  /** Windows: explicit DACL (SDDL) for every named pipe (-pipe-sddl); unset keeps the default pipe DACL. */
  pipeSddl?: string;
  /** Persistent state (-state-dir): SMB reference counts; Linux also SMB mounts and the iSCSI mutual CHAP secret. */
  stateDir: string;
  /** Linux `-iscsi-node-db`: open-iscsi's node database; unset, found from the installed open-iscsi. */
  iscsiNodeDb?: string;
  /**
   * Linux: the node-wide directory of intent records of destructive steps (-intent-dir; default
   * /var/lib/csi-proxy/intents, state/intent-records.ts): persistent, root-owned, writable by nobody else.
   */
  intentDir?: string;
  /**
   * `-lock-dir`: the node-wide lock directory shared by every csi-proxy on the node (state/lock-dir.ts);
   * unset, /run/csi-proxy-locks (Windows %ProgramData%\csi-proxy\locks). Tests give their own.
   */
  lockDir?: string;
  /** Services System StartService/StopService may act on (-allowed-service); "*" allows any. */
  allowedServices: string[];
  /** Where services report what they do on their own (SMB start-up reconciliation, sweeps). */
  logger?: { info(msg: string): void; warning(msg: string): void };
}
