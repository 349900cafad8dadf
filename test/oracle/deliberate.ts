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
];

/** The `doc` phrase of the deliberate difference covering the row, or undefined. */
export function deliberateReason(row: RecordedRow, upstream: string, ours: string): string | undefined {
  return DELIBERATE.find((d) => d.applies(row, upstream, ours))?.doc;
}
