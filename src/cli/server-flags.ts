import type { FlagSpec } from "./go-flags.ts";
import { defaultLockDir } from "../state/lock-dir.ts";

/** klog flags upstream accepts that we take for compatibility but do not act on. */
export const ignoredKlogFlags: FlagSpec[] = [
  { name: "vmodule", kind: "string", default: "", usage: "accepted for klog compatibility; no effect" },
  { name: "log_dir", kind: "string", default: "", usage: "accepted for klog compatibility; no effect (use -log_file)" },
  { name: "log_file_max_size", kind: "int", default: 1800, usage: "accepted for klog compatibility; no effect" },
  { name: "stderrthreshold", kind: "string", default: "2", usage: "accepted for klog compatibility; no effect" },
  { name: "alsologtostderrthreshold", kind: "string", default: "", usage: "accepted for klog compatibility; no effect" },
  { name: "legacy_stderr_threshold_behavior", kind: "bool", default: true, usage: "accepted for klog compatibility; no effect" },
  { name: "skip_headers", kind: "bool", default: false, usage: "accepted for klog compatibility; no effect" },
  { name: "skip_log_headers", kind: "bool", default: false, usage: "accepted for klog compatibility; no effect" },
  { name: "add_dir_header", kind: "bool", default: false, usage: "accepted for klog compatibility; no effect" },
  { name: "one_output", kind: "bool", default: false, usage: "accepted for klog compatibility; no effect" },
  { name: "log_backtrace_at", kind: "string", default: "", usage: "accepted for klog compatibility; no effect" },
];

/** The daemon's flags: upstream's names and defaults, plus -socket-dir for Linux. */
export function serverFlags(platform: NodeJS.Platform, defaultSocketDir: string): FlagSpec[] {
  return [
    {
      name: "kubelet-path",
      kind: "string",
      default: platform === "win32" ? "C:\\var\\lib\\kubelet" : "/var/lib/kubelet",
      usage: "Prefix path of the kubelet directory in the host file system",
    },
    { name: "working-dir", kind: "stringList", usage: "Additional directory paths (repeatable) that filesystem and SMB calls may use" },
    { name: "windows-service", kind: "bool", default: false, usage: "Run as a Windows service (Service Control Manager)" },
    { name: "require-privacy", kind: "bool", default: true, usage: "SMB global mappings require privacy (encryption)" },
    {
      name: "state-dir",
      kind: "string",
      default: platform === "win32" ? "C:\\ProgramData\\csi-proxy" : "/var/lib/csi-proxy",
      usage: "Directory for persistent state (SMB mapping reference counts; Linux: SMB mounts, iSCSI mutual CHAP secret)",
    },
    {
      name: "allowed-service",
      kind: "stringList",
      usage: "Service (repeatable) that System StartService/StopService may act on; none by default, * for any (upstream's behaviour)",
    },
    {
      name: "pipe-sddl",
      kind: "string",
      default: "",
      usage: "Windows: DACL in SDDL form applied to every named pipe, e.g. D:P(A;;GA;;;SY)(A;;GA;;;BA); empty keeps the default pipe DACL",
    },
    { name: "metrics-bind-address", kind: "string", default: "", usage: "host:port to serve Prometheus metrics on at /metrics; empty disables metrics" },
    {
      name: "lock-dir",
      kind: "string",
      default: defaultLockDir(platform === "win32" ? "win32" : "linux"),
      usage: "Node-wide lock directory shared by every csi-proxy on the node (daemon and in-process users), whatever their -state-dir; only for tests",
    },
    { name: "socket-dir", kind: "string", default: defaultSocketDir, usage: "Linux: directory of the endpoints' Unix sockets" },
    {
      name: "iscsi-node-db",
      kind: "string",
      default: "",
      usage: "Linux: open-iscsi's node database directory; empty finds it from the installed open-iscsi (/etc/iscsi/nodes or /var/lib/iscsi/nodes)",
    },
    {
      name: "intent-dir",
      kind: "string",
      default: "/var/lib/csi-proxy/intents",
      usage: "Linux: node-wide persistent directory of the intent records of destructive steps (root-owned, writable by nobody else; never under /run)",
    },
    { name: "default-fs-type", kind: "string", default: "ext4", usage: "Linux: filesystem FormatVolume creates (ext4 or xfs)" },
    {
      name: "host-command-timeout",
      kind: "int",
      default: 0,
      usage: "Linux: upper bound in seconds for any one host command (mkfs, mount, sfdisk…); a command still running then gets SIGTERM (SIGKILL 2 s later) and the call answers DeadlineExceeded; a step that must finish (sfdisk, partx, e2fsck -p, offline resize2fs) is never signalled: the call answers DeadlineExceeded and it runs on, its device locked. 0 keeps each step's own bound (60 s; 30 min for mkfs, fsck and filesystem growth)",
    },
    { name: "version", kind: "bool", default: false, usage: "print the version, the commit and the Node.js, then exit" },
    { name: "v", kind: "int", default: 0, usage: "number for the log level verbosity" },
    { name: "log_file", kind: "string", default: "", usage: "If non-empty, use this log file (with -logtostderr=false)" },
    { name: "logtostderr", kind: "bool", default: true, usage: "log to standard error instead of files" },
    { name: "alsologtostderr", kind: "bool", default: false, usage: "log to standard error as well as files" },
    ...ignoredKlogFlags,
  ];
}
