/**
 * Deliberate differences from upstream's recorded answers: each rule names the rows it covers, why
 * ours differs, and the phrase under which docs/driver-compat.md lists it ("Upstream's binary as the
 * oracle"). A rule applies only when its predicate holds for the row AND for both answers, so it
 * cannot silently cover an unrelated change.
 */
import { pathCases } from "./corpus.ts";
import type { RecordedRow } from "./compare.ts";

export interface Deliberate {
  /** The phrase docs/driver-compat.md uses for it. */
  doc: string;
  why: string;
  applies(row: RecordedRow, upstream: string, ours: string): boolean;
}

const caseOf = (row: RecordedRow) => row.id.split("/")[3]?.replace(/(\+force|-as-(target|source))$/, "") ?? "";
const cases = pathCases();
const isPath = (name: string) => name in cases;

export const DELIBERATE: Deliberate[] = [
  {
    doc: "upstream crashes",
    why: "upstream's server dies (nil pointer) on the request; ours answers InvalidArgument and keeps serving",
    applies: (_row, upstream, ours) => upstream === "crash" && ours.startsWith("error "),
  },
  {
    doc: "allowed directory on directory boundaries",
    why: "upstream accepts `<kubelet>-other\\x` as inside `<kubelet>` (string prefix); ours refuses it (PermissionDenied, `is not within the working directories`)",
    applies: (row, _u, ours) => caseOf(row) === "siblingPrefix" && ours.includes("is not within the working directories"),
  },
  {
    doc: "the kubelet directory itself is never removed or emptied",
    why: "upstream's Rmdir/RmdirContents of the kubelet dir deletes it or its contents; ours refuses (PermissionDenied)",
    applies: (row, _u, ours) => ["kubelet", "kubeletSlash", "kubeletUpper"].includes(caseOf(row)) && /^(Rmdir|RmdirContents)$/.test(row.method) && ours.includes("it is an allowed directory itself"),
  },
  {
    doc: "`<`, `>` and control characters are refused up front",
    why: "upstream passes them to the filesystem (which fails with ERROR_INVALID_NAME, or on other filesystems creates odd names); ours answers `path contains invalid characters` before touching anything",
    applies: (row, _u, ours) => ["lessThan", "control"].includes(caseOf(row)) && ours.includes("path contains invalid characters"),
  },
  {
    doc: "`..` inside a name is accepted",
    why: "upstream refuses any `..` substring (`a..b`); ours refuses `..` only as a component, which cannot leave the directory",
    applies: (row, upstream) => caseOf(row) === "dotDotInName" && upstream.includes("path contains invalid characters"),
  },
  {
    doc: "components of dots and spaces are refused",
    why: "upstream refuses only a `..` substring, so `<kubelet>\\. .\\dir` reaches Windows, whose path normalisation makes a last component `. .` name the directory holding it and drops one dot of a middle one; ours refuses every dots-and-spaces component with two or more dots (`path contains invalid characters`), so the path checked is the path acted on",
    applies: (row, upstream, ours) => caseOf(row) === "spacedDots" && ours.startsWith("error path contains invalid characters: ") && !upstream.includes("path contains invalid characters"),
  },
  {
    doc: "IsSymlink and IsMountPoint validate the path",
    why: "upstream lets them probe any path on the host (relative to its working directory, outside the kubelet dir); ours validates it like every other filesystem call",
    applies: (row, upstream, ours) =>
      /^(IsSymlink|IsMountPoint)$/.test(row.method) && isPath(caseOf(row)) && ours.startsWith("error ") && (/not within the working directories|path contains invalid characters|invalid character \\ at beginning|exceeds maximum|must be absolute|not an absolute/.test(ours) || upstream.startsWith("ok ")),
  },
  {
    doc: "Wine's CreateSymbolicLinkW stub",
    why: "under Wine, upstream's CreateSymlink/LinkPath over an existing entry answers OK (the stub creates and checks nothing); ours checks first and answers Go's Windows text",
    applies: (row, upstream, ours) =>
      /^(CreateSymlink|LinkPath)$/.test(row.method) && upstream.startsWith("ok ") && /Cannot create a file when that file already exists\.$|the parent directory does not exist$/.test(ours),
  },
  {
    doc: "the empty path's message as recorded",
    why: "for an empty path upstream's own text is `not an absolute Windows path: ` (its source; ours sends it); the recording holds an empty message, as node:http2 received grpc-go's trailer",
    applies: (row, upstream, ours) => caseOf(row) === "empty" && upstream === "error " && ours === "error not an absolute Windows path: ",
  },
  {
    doc: "SMB local paths are checked before the host is asked",
    why: "v1.3.0 asks WMI about the mapping before it validates the local path (under Wine its answer is WMI's failure; on Windows it would map first); ours validates first, as v1.1.3 did, with v1.1.3's recorded text",
    applies: (row, upstream, ours) =>
      row.method === "NewSmbGlobalMapping" && caseOf(row).startsWith("local-") && upstream.includes("failed to connect to WMI") &&
      /is not within the working directories|not an absolute Windows path|path contains invalid characters/.test(ours),
  },
  {
    doc: "service names are checked before the host is asked",
    why: "v1.3.0 asks WMI for any name (under Wine: `Not Found`); ours refuses an empty or invalid name (InvalidArgument) and, for StartService/StopService, a service not listed in -allowed-service (PermissionDenied) before touching the service manager",
    applies: (row, upstream, ours) =>
      row.group === "system" && /^(GetService|StartService|StopService)$/.test(row.method) && /failed to (get|stop) service .*Not Found/.test(upstream) &&
      /service name is required|invalid service name|is not allowed: it is not listed in -allowed-service/.test(ours),
  },
  {
    doc: "GetVolumeIDFromTargetPath keeps the text drivers match",
    why: "v1.3.0 answers a missing or unmounted target with `File not found.` / `not a mounted folder` (v1beta1 also with a Go stack trace); ours keeps the wording aws-ebs-csi-driver and amazon-ecs-agent match (`because it does not exist`, see Where clients match text)",
    applies: (row, upstream, ours) =>
      /^(GetVolumeIDFromTargetPath|GetVolumeIDFromMount)$/.test(row.method) && /File not found\.|The system cannot find the file specified\.|not a mounted folder/.test(upstream) && ours.startsWith("error "),
  },
  {
    doc: "an empty disk name is named",
    why: "v1.3.0 answers GetDiskNumberByName without a name with an empty message; ours says `disk name is empty` (InvalidArgument)",
    applies: (row, upstream, ours) => row.method === "GetDiskNumberByName" && upstream === "error " && ours === "error disk name is empty",
  },
];

/** The `doc` phrase of the deliberate difference covering the row, or undefined. */
export function deliberateReason(row: RecordedRow, upstream: string, ours: string): string | undefined {
  return DELIBERATE.find((d) => d.applies(row, upstream, ours))?.doc;
}
