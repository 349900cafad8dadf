import type { FilesystemService } from "./filesystem/types.ts";
import type { DiskService } from "./disk/types.ts";
import type { VolumeService } from "./volume/types.ts";
import type { SmbService } from "./smb/types.ts";
import type { IscsiService } from "./iscsi/types.ts";
import type { SystemService } from "./system/types.ts";

/** The six version-agnostic group services: the in-process API (what HostProcess containers can call directly). */
export interface Services {
  filesystem: FilesystemService;
  disk: DiskService;
  volume: VolumeService;
  smb: SmbService;
  iscsi: IscsiService;
  system: SystemService;
}
