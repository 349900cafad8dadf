/**
 * The served API surface: every group, every version, and the generated service each one serves.
 * Group and version names are spelled exactly as in pipe and socket names.
 */
import type { DescService } from "@bufbuild/protobuf";
import { Disk as disk_v1alpha1 } from "../gen/disk/v1alpha1/api_pb.ts";
import { Disk as disk_v1beta1 } from "../gen/disk/v1beta1/api_pb.ts";
import { Disk as disk_v1beta2 } from "../gen/disk/v1beta2/api_pb.ts";
import { Disk as disk_v1beta3 } from "../gen/disk/v1beta3/api_pb.ts";
import { Disk as disk_v1 } from "../gen/disk/v1/api_pb.ts";
import { Filesystem as filesystem_v1alpha1 } from "../gen/filesystem/v1alpha1/api_pb.ts";
import { Filesystem as filesystem_v1beta1 } from "../gen/filesystem/v1beta1/api_pb.ts";
import { Filesystem as filesystem_v1beta2 } from "../gen/filesystem/v1beta2/api_pb.ts";
import { Filesystem as filesystem_v1 } from "../gen/filesystem/v1/api_pb.ts";
import { Filesystem as filesystem_v2alpha1 } from "../gen/filesystem/v2alpha1/api_pb.ts";
import { Volume as volume_v1alpha1 } from "../gen/volume/v1alpha1/api_pb.ts";
import { Volume as volume_v1beta1 } from "../gen/volume/v1beta1/api_pb.ts";
import { Volume as volume_v1beta2 } from "../gen/volume/v1beta2/api_pb.ts";
import { Volume as volume_v1beta3 } from "../gen/volume/v1beta3/api_pb.ts";
import { Volume as volume_v1 } from "../gen/volume/v1/api_pb.ts";
import { Volume as volume_v2alpha1 } from "../gen/volume/v2alpha1/api_pb.ts";
import { Smb as smb_v1alpha1 } from "../gen/smb/v1alpha1/api_pb.ts";
import { Smb as smb_v1beta1 } from "../gen/smb/v1beta1/api_pb.ts";
import { Smb as smb_v1beta2 } from "../gen/smb/v1beta2/api_pb.ts";
import { Smb as smb_v1 } from "../gen/smb/v1/api_pb.ts";
import { Iscsi as iscsi_v1alpha1 } from "../gen/iscsi/v1alpha1/api_pb.ts";
import { Iscsi as iscsi_v1alpha2 } from "../gen/iscsi/v1alpha2/api_pb.ts";
import { System as system_v1alpha1 } from "../gen/system/v1alpha1/api_pb.ts";

/** Every group/version and its service descriptor, versions oldest first. */
export const catalog = {
  disk: { v1alpha1: disk_v1alpha1, v1beta1: disk_v1beta1, v1beta2: disk_v1beta2, v1beta3: disk_v1beta3, v1: disk_v1 },
  filesystem: { v1alpha1: filesystem_v1alpha1, v1beta1: filesystem_v1beta1, v1beta2: filesystem_v1beta2, v1: filesystem_v1, v2alpha1: filesystem_v2alpha1 },
  volume: { v1alpha1: volume_v1alpha1, v1beta1: volume_v1beta1, v1beta2: volume_v1beta2, v1beta3: volume_v1beta3, v1: volume_v1, v2alpha1: volume_v2alpha1 },
  smb: { v1alpha1: smb_v1alpha1, v1beta1: smb_v1beta1, v1beta2: smb_v1beta2, v1: smb_v1 },
  iscsi: { v1alpha1: iscsi_v1alpha1, v1alpha2: iscsi_v1alpha2 },
  system: { v1alpha1: system_v1alpha1 },
} as const;

export type Catalog = typeof catalog;
export type Group = keyof Catalog;
export type VersionOf<G extends Group> = keyof Catalog[G] & string;
/** The service descriptor of one group/version. */
export type ServiceOf<G extends Group, V extends VersionOf<G>> = Catalog[G][V] extends DescService ? Catalog[G][V] : never;

export const groups = Object.keys(catalog) as Group[];

/** Versions served for a group, oldest first (kubernetes ordering: major, then alpha < beta < GA). */
export function versionsOf<G extends Group>(group: G): VersionOf<G>[] {
  return (Object.keys(catalog[group]) as VersionOf<G>[]).sort(compareVersions);
}

/** Every (group, version) pair: the 23 endpoints of the server. */
export function allEndpoints(): { group: Group; version: string }[] {
  return groups.flatMap((group) => versionsOf(group).map((version) => ({ group, version })));
}

const versionPattern = /^v(\d+)(?:(alpha|beta)(\d+))?$/;

/** Orders kubernetes API versions: v1alpha1 < v1alpha2 < v1beta1 < v1 < v2alpha1 < v2. */
export function compareVersions(a: string, b: string): number {
  const pa = versionPattern.exec(a), pb = versionPattern.exec(b);
  if (!pa || !pb) throw new Error(`not an API version: ${!pa ? a : b}`);
  const rank = (m: RegExpExecArray) => [Number(m[1]), m[2] === "alpha" ? 0 : m[2] === "beta" ? 1 : 2, Number(m[3] ?? 0)];
  const ra = rank(pa), rb = rank(pb);
  for (let i = 0; i < 3; i++) if (ra[i] !== rb[i]) return ra[i] - rb[i];
  return 0;
}
