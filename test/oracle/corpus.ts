/**
 * The oracle request corpus: requests sent to upstream's csi-proxy.exe (recorded by
 * scripts/oracle-record.ts into test/oracle/corpus/<tag>.json) and, by test/oracle/oracle-diff.test.ts,
 * to ours. Requests name paths under `{W}`, the Wine work directory (`C:\csi-e2e-oracle`), whose
 * `kubelet` subdirectory is the server's -kubelet-path; {@link fixtureLayout} is recreated before
 * every row marked `fixture`.
 *
 * Pure data: no I/O. Row ids are stable and unique; the recorded answers are matched by id.
 */
import type { DescService } from "@bufbuild/protobuf";
import { catalog, type Group } from "../../src/api/catalog.ts";

/** The Wine work directory every recording and every differential run uses (length-sensitive rows depend on it). */
export const ORACLE_WORK = "C:\\csi-e2e-oracle";
export const ORACLE_KUBELET = `${ORACLE_WORK}\\kubelet`;

export interface CorpusRow {
  id: string;
  group: Group;
  version: string;
  /** RPC name as in the proto (PascalCase). */
  method: string;
  /** protobuf-es init object (JSON names of the TypeScript messages: camelCase). */
  request: Record<string, unknown>;
  /** Recreate {@link fixtureLayout} before the call. */
  fixture?: boolean;
}

/**
 * The filesystem tree under {W} before a `fixture` row: directories end with `\`, files carry their
 * text. `kubelet-other` shares the kubelet dir's string prefix; `outside` is outside it.
 */
export const fixtureLayout: Record<string, string | null> = {
  "kubelet\\": null,
  "kubelet\\dir\\": null,
  "kubelet\\full\\": null,
  "kubelet\\full\\f.txt": "data",
  "kubelet\\file.txt": "data",
  "kubelet-other\\": null,
  "kubelet-other\\x\\": null,
  "outside\\": null,
  "outside\\y\\": null,
};

/** Paths the filesystem validation sees, by name. Lengths count UTF-8 bytes, as Go's len does. */
export function pathCases(): Record<string, string> {
  const K = ORACLE_KUBELET;
  const fill = (total: number, ch = "x") => `${K}\\${ch.repeat(total - K.length - 1)}`;
  const multiByte = `${K}\\${"é".repeat(Math.ceil((261 - K.length - 1) / 2))}`; // > 260 bytes, < 260 characters
  return {
    empty: "",
    relative: "rel\\x",
    relativeDotDot: "rel..x",
    relativeColon: "a:b",
    slashDrive: `C:/csi-e2e-oracle/kubelet/dir`,
    driveRelative: "C:x",
    posix: "/csi-e2e-oracle/kubelet/dir",
    unc: "\\\\server\\share\\x",
    rooted: "\\csi-e2e-oracle\\kubelet\\dir",
    device: "\\\\?\\C:\\csi-e2e-oracle\\kubelet\\dir",
    len260: fill(260),
    len261: fill(261),
    multiByte,
    kubelet: K,
    kubeletSlash: `${K}\\`,
    kubeletUpper: K.toUpperCase(),
    lowerDrive: `c${K.slice(1)}\\dir`,
    dir: `${K}\\dir`,
    missing: `${K}\\missing`,
    missingNested: `${K}\\missing\\a\\b`,
    file: `${K}\\file.txt`,
    underFile: `${K}\\file.txt\\x`,
    full: `${K}\\full`,
    dotDotComponent: `${K}\\dir\\..\\..\\outside`,
    dotDotInName: `${K}\\a..b`,
    dotComponent: `${K}\\.\\dir`,
    spacedDots: `${K}\\. .\\dir`,
    doubleSep: `${K}\\\\dir`,
    colon: `${K}\\a:b`,
    star: `${K}\\a*b`,
    question: `${K}\\a?b`,
    pipe: `${K}\\a|b`,
    quote: `${K}\\a"b`,
    slashInside: `${K}\\dir/x`,
    lessThan: `${K}\\a<b`,
    control: `${K}\\a\u0001b`,
    siblingPrefix: `${ORACLE_WORK}\\kubelet-other\\x`,
    outside: `${ORACLE_WORK}\\outside\\y`,
    otherDrive: "D:\\csi-e2e-oracle\\kubelet\\dir",
  };
}

/**
 * Path cases added after the recordings were made: their rows await a recording of upstream's exe
 * (scripts/oracle-record.ts). Until then the coverage test expects the recordings to lack exactly
 * these rows (and fails once they are recorded: remove the case here), and the differential test
 * checks ours against the deliberate rule that names them (deliberate.ts).
 */
export const AWAITING_RECORDING: readonly string[] = ["spacedDots"];

/** The path case a filesystem row id names (`filesystem/v1/Rmdir/dir+force` → `dir`). */
export const pathCaseOf = (id: string) => id.split("/")[3]?.replace(/(\+force|-as-(target|source))$/, "") ?? "";

/** Whether the row `id` belongs to a case of {@link AWAITING_RECORDING}. */
export const awaitingRecording = (id: string) => id.startsWith("filesystem/") && AWAITING_RECORDING.includes(pathCaseOf(id));

/** A few cases for the older filesystem versions (the full set runs on v1). */
const LEGACY_CASES = ["empty", "relative", "slashDrive", "unc", "len261", "kubelet", "dir", "missing", "file", "full", "dotDotComponent", "dotDotInName", "colon", "siblingPrefix", "outside"];

function filesystemRows(): CorpusRow[] {
  const rows: CorpusRow[] = [];
  const cases = pathCases();
  const K = ORACLE_KUBELET;
  const add = (version: string, method: string, name: string, request: Record<string, unknown>) =>
    rows.push({ id: `filesystem/${version}/${method}/${name}`, group: "filesystem", version, method, request, fixture: true });
  for (const version of ["v1", "v2alpha1", "v1beta2", "v1beta1", "v1alpha1"]) {
    const names = version === "v1" ? Object.keys(cases) : LEGACY_CASES;
    const legacy = version === "v1beta1" || version === "v1alpha1";
    for (const name of names) {
      const p = cases[name]!;
      add(version, "PathExists", name, { path: p });
      add(version, "Mkdir", name, { path: p });
      add(version, "Rmdir", name, { path: p });
      add(version, "Rmdir", `${name}+force`, { path: p, force: true });
      if (legacy) {
        add(version, "LinkPath", `${name}-as-target`, { sourcePath: `${K}\\dir`, targetPath: p });
        add(version, "LinkPath", `${name}-as-source`, { sourcePath: p, targetPath: `${K}\\newlink` });
        add(version, "IsMountPoint", name, { path: p });
      } else {
        if (version !== "v1beta2") add(version, "RmdirContents", name, { path: p });
        add(version, "CreateSymlink", `${name}-as-target`, { sourcePath: `${K}\\dir`, targetPath: p });
        add(version, "CreateSymlink", `${name}-as-source`, { sourcePath: p, targetPath: `${K}\\newlink` });
        add(version, "IsSymlink", name, { path: p });
      }
    }
  }
  return rows;
}

/** Every method of every group/version with an empty request: the empty-field checks and version gates. */
function emptyRequestRows(): CorpusRow[] {
  const rows: CorpusRow[] = [];
  for (const [group, versions] of Object.entries(catalog)) {
    if (group === "filesystem") continue; // covered above with every path
    for (const [version, service] of Object.entries(versions)) {
      for (const method of service.methods) {
        rows.push({ id: `${group}/${version}/${method.name}/empty`, group: group as Group, version, method: method.name, request: {} });
      }
    }
  }
  return rows;
}

/** Ids that reach the host beyond upstream's own checks (volume/disk ids, SMB paths, iSCSI portals). */
function valueRows(): CorpusRow[] {
  const K = ORACLE_KUBELET;
  const rows: CorpusRow[] = [];
  const add = (group: Group, version: string, method: string, name: string, request: Record<string, unknown>, fixture = false) =>
    rows.push({ id: `${group}/${version}/${method}/${name}`, group, version, method, request, ...(fixture ? { fixture } : {}) });
  const vol = "\\\\?\\Volume{00000000-0000-0000-0000-000000000000}\\";
  for (const version of ["v1", "v2alpha1", "v1beta3", "v1beta2"]) {
    add("volume", version, "MountVolume", "no-target", { volumeId: vol });
    add("volume", version, "MountVolume", "no-volume", { targetPath: `${K}\\dir` });
    add("volume", version, "UnmountVolume", "no-target", { volumeId: vol });
    add("volume", version, "GetVolumeIDFromTargetPath", "plain-dir", { targetPath: `${K}\\dir` }, true);
    add("volume", version, "GetVolumeIDFromTargetPath", "missing", { targetPath: `${K}\\missing` }, true);
    add("volume", version, "GetClosestVolumeIDFromTargetPath", "plain-dir", { targetPath: `${K}\\dir` }, true);
  }
  for (const version of ["v1beta1", "v1alpha1"]) {
    add("volume", version, "MountVolume", "no-path", { volumeId: vol });
    add("volume", version, "MountVolume", "no-volume", { path: `${K}\\dir` });
    add("volume", version, "DismountVolume", "no-path", { volumeId: vol });
  }
  add("volume", "v1beta1", "GetVolumeIDFromMount", "plain-dir", { mount: `${K}\\dir` }, true);
  for (const version of ["v1", "v1beta3"]) add("disk", version, "GetDiskStats", "disk-7", { diskNumber: 7 });
  for (const version of ["v1beta2", "v1beta1"]) {
    add("disk", version, "DiskStats", "not-a-number", { diskID: "abc" });
    add("disk", version, "DiskStats", "negative", { diskID: "-1" });
  }
  for (const version of ["v1beta2"]) {
    add("disk", version, "SetAttachState", "not-a-number", { diskID: "abc", isOnline: true });
    add("disk", version, "GetAttachState", "not-a-number", { diskID: "x1" });
  }
  const remotes: Record<string, string> = {
    hostOnly: "\\\\server",
    hostSlash: "\\\\server\\",
    slashes: "//server/share",
    share: "\\\\server\\share",
    deep: "\\\\server\\share\\dir\\sub",
    spaces: "   ",
  };
  for (const version of ["v1", "v1beta2", "v1beta1", "v1alpha1"]) {
    const rp = "remotePath";
    for (const [name, remote] of Object.entries(remotes)) {
      add("smb", version, "RemoveSmbGlobalMapping", `remote-${name}`, { [rp]: remote });
    }
    add("smb", version, "NewSmbGlobalMapping", "remote-hostOnly", { [rp]: "\\\\server", localPath: `${K}\\mnt` }, true);
    add("smb", version, "NewSmbGlobalMapping", "local-outside", { [rp]: "\\\\server\\share", localPath: `${ORACLE_WORK}\\outside\\mnt` }, true);
    add("smb", version, "NewSmbGlobalMapping", "local-relative", { [rp]: "\\\\server\\share", localPath: "rel\\mnt" }, true);
    add("smb", version, "NewSmbGlobalMapping", "local-slash", { [rp]: "\\\\server\\share", localPath: "C:/csi-e2e-oracle/kubelet/mnt" }, true);
  }
  for (const version of ["v1alpha2", "v1alpha1"]) {
    add("iscsi", version, "AddTargetPortal", "address-only", { targetPortal: { targetAddress: "192.0.2.1" } });
    add("iscsi", version, "DiscoverTargetPortal", "no-portal", {});
    add("iscsi", version, "ConnectTarget", "bad-auth", { targetPortal: { targetAddress: "192.0.2.1", targetPort: 3260 }, iqn: "iqn.2000-01.x:y", authType: 7 });
    add("iscsi", version, "ConnectTarget", "no-portal", { iqn: "iqn.2000-01.x:y" });
    add("iscsi", version, "DisconnectTarget", "no-portal", { iqn: "iqn.2000-01.x:y" });
    add("iscsi", version, "GetTargetDisks", "no-portal", { iqn: "iqn.2000-01.x:y" });
    add("iscsi", version, "RemoveTargetPortal", "no-portal", {});
  }
  add("system", "v1alpha1", "GetService", "missing", { name: "csi-oracle-no-such-service" });
  add("system", "v1alpha1", "StartService", "missing", { name: "csi-oracle-no-such-service" });
  add("system", "v1alpha1", "StopService", "missing", { name: "csi-oracle-no-such-service" });
  return rows;
}

/** The method's input fields, or null when the group/version has no such method. */
function inputFields(group: Group, version: string, method: string): string[] | null {
  const service = (catalog[group] as Record<string, DescService>)[version];
  const m = service?.methods.find((x) => x.name === method);
  return m ? m.input.fields.map((f) => f.localName) : null;
}

/**
 * The whole corpus, ids unique. Rows for methods a version does not have are dropped; `path` and
 * `targetPath` are renamed to the field the version has (older volume versions say `path`).
 * Throws on a request field the method does not have.
 */
export function buildCorpus(): CorpusRow[] {
  const rows: CorpusRow[] = [];
  const seen = new Set<string>();
  for (const r of [...filesystemRows(), ...emptyRequestRows(), ...valueRows()]) {
    const fields = inputFields(r.group, r.version, r.method);
    if (!fields) continue;
    const request: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r.request)) {
      const alias = k === "targetPath" && !fields.includes(k) && r.group === "volume" ? "path" : k;
      if (!fields.includes(alias)) throw new Error(`corpus row ${r.id}: ${r.method} has no field ${k}`);
      request[alias] = v;
    }
    if (seen.has(r.id)) throw new Error(`duplicate corpus id ${r.id}`);
    seen.add(r.id);
    rows.push({ ...r, request });
  }
  return rows;
}

/** The flag invocations recorded (exit code and output). */
export const flagCases: { id: string; args: string[] }[] = [
  { id: "flags/-h", args: ["-h"] },
  { id: "flags/--help", args: ["--help"] },
  { id: "flags/unknown", args: ["-no-such-flag"] },
  { id: "flags/bad-bool", args: ["-windows-service=maybe"] },
  { id: "flags/missing-value", args: ["-kubelet-path"] },
];
