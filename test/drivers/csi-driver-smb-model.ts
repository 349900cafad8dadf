// csi-driver-smb's Windows node paths, restated call by call from its code: kubernetes-csi/csi-driver-smb at
// 95c6968057eeab711c5913fa6c26295759b6ceb3 (pkg/smb/nodeserver.go, pkg/smb/smb_common_windows.go,
// pkg/mounter/safe_mounter_windows.go, safe_mounter_v1beta_windows.go, refcounter_windows.go).
// - The mounter is chosen when the driver starts (safe_mounter_windows.go:372-401): filesystem v1 + smb v1
//   when both pipes can be dialled (csi-proxy's NewClient dials the pipe first), else v1beta1.
// - With RemoveSMBMappingDuringUnmount (the default), the v1 mounter counts each share's volumes in files
//   (refcounter_windows.go:74-116: <base>\<host>\<share>\<md5(volume id)>), which outlive a driver restart;
//   unstaging removes this volume's file and, when none is left, the global mapping. The v1beta1 mounter
//   never removes a mapping (safe_mounter_v1beta_windows.go:96-101).
// - prepareStagePath / preparePublishPath failures are plain Go errors (nodeserver.go:306-308, 121-123):
//   kubelet sees Unknown. Everything else the driver answers with a status code of its own.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { CsiError, type Proxy, type SmbEnv } from "./replay-harness.ts";

export type SmbMounterVersion = "v1" | "v1beta1";

/** go-winio DialPipe as csi-proxy's NewClientWithPipePath does it first (csi-proxy v1.1.3 client/groups/filesystem/v1/client_generated.go:36-42, the same for every group). */
function dials(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socket);
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/** refcounter_windows.go:47-64: `\\host\share` of a remote path, lower case; invalid → error. */
export function rootMappingPath(remote: string): string {
  const parts = remote.split("\\").filter(Boolean).slice(0, 2);
  if (parts.length !== 2) throw new Error(`remote path (${remote}) is invalid`);
  return `\\\\${parts[0]}\\${parts[1]}`.toLowerCase();
}

export class CsiDriverSmb {
  readonly proxy: Proxy;
  readonly version: SmbMounterVersion;
  readonly env: SmbEnv;
  /** Stands for refcounter_windows.go:31 basePath `c:\csi\smbmounts` (on the node's disk: survives restarts). */
  readonly refBase: string;

  private constructor(env: SmbEnv, version: SmbMounterVersion, refBase: string) {
    this.env = env;
    this.version = version;
    this.refBase = refBase;
    this.proxy = env.proxy(version === "v1" ? { filesystem: "v1", smb: "v1" } : { filesystem: "v1beta1", smb: "v1beta1" });
  }

  /** The driver starting: NewSafeMounter (safe_mounter_windows.go:380-400): v1 when its pipes dial, else v1beta1, else it fails. */
  static async start(env: SmbEnv, refBase: string): Promise<CsiDriverSmb> {
    const pipe = (group: string, version: string) => path.join(env.socketDir, `csi-proxy-${group}-${version}.sock`);
    if ((await dials(pipe("filesystem", "v1"))) && (await dials(pipe("smb", "v1")))) return new CsiDriverSmb(env, "v1", refBase);
    if ((await dials(pipe("filesystem", "v1beta1"))) && (await dials(pipe("smb", "v1beta1")))) return new CsiDriverSmb(env, "v1beta1", refBase);
    throw new Error("failed to connect to csi-proxy v1beta");
  }

  // ---- the mounter

  async existsPath(p: string): Promise<boolean> {
    return (await this.proxy.call<{ exists: boolean }>("filesystem", "pathExists", { path: p })).exists; // v1 :300-310, v1beta1 :228-239
  }

  /** v1 :229-247 (PathExists, IsSymlink); v1beta1 :156-174 (PathExists, IsMountPoint). Missing → (true, os.ErrNotExist). */
  async isLikelyNotMountPoint(p: string): Promise<{ notMnt: boolean; notExist: boolean }> {
    if (!(await this.existsPath(p))) return { notMnt: true, notExist: true };
    if (this.version === "v1") return { notMnt: !(await this.proxy.call<{ isSymlink: boolean }>("filesystem", "isSymlink", { path: p })).isSymlink, notExist: false };
    return { notMnt: !(await this.proxy.call<{ isMountPoint: boolean }>("filesystem", "isMountPoint", { path: p })).isMountPoint, notExist: false };
  }

  /** v1 :198-209 Rmdir(force); v1beta1 :124-136 Rmdir(force, context POD). */
  rmdir(p: string) {
    return this.proxy.call("filesystem", "rmdir", this.version === "v1" ? { path: p, force: true } : { path: p, force: true, context: 1 });
  }

  /** smb_common_windows.go:55-71 removeDir: PathExists, then Rmdir. */
  async removeDir(p: string): Promise<void> {
    if (await this.existsPath(p)) await this.rmdir(p);
  }

  /** v1 :71-132, v1beta1 :47-94. */
  async smbMount(source: string, target: string, volumeId: string, user: string, password: string): Promise<void> {
    const parent = path.dirname(target);
    let parentExists: boolean;
    try {
      parentExists = await this.existsPath(parent);
    } catch (e) {
      throw new Error(`parent dir: ${parent} exist check failed with err: ${(e as Error).message}`);
    }
    if (!parentExists) {
      await this.proxy.call("filesystem", "mkdir", { path: parent }).catch((e) => {
        throw new Error(`create of parent dir: ${parent} dailed with error: ${(e as Error).message}`);
      });
    }
    const remote = source.replaceAll("/", "\\").replace(/\\$/, ""); // v1 :104-105
    const mapping = this.version === "v1" ? rootMappingPath(remote) : null; // v1 :106-109 (its lock is per mapping path)
    await this.proxy.call("smb", "newSmbGlobalMapping", { localPath: target, remotePath: remote, username: user, password }).catch((e) => {
      throw new Error(this.version === "v1" ? `NewSmbGlobalMapping(${remote}, ${target}) failed with error: ${(e as Error).message}` : `smb mapping failed with error: ${(e as Error).message}`);
    });
    if (mapping) {
      // v1 :126-130 → refcounter_windows.go:74-91: one file per volume, named by the md5 of its lower-cased id
      const dir = this.refDir(mapping);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, createHash("md5").update(volumeId.toLowerCase()).digest("hex")), remote);
    }
  }

  refDir(mapping: string): string {
    return path.join(this.refBase, ...mapping.replace(/^\\\\/, "").split("\\"));
  }

  /** v1 :134-171 (os.Readlink; count; RemoveSmbGlobalMapping at 0; Rmdir); v1beta1 :96-101 (Rmdir only). */
  async smbUnmount(target: string, volumeId: string): Promise<void> {
    if (this.version === "v1") {
      let remote: string | null = null;
      try {
        remote = await this.env.remoteOfLink(readlinkSync(target)); // os.Readlink gives the UNC path on Windows
      } catch {
        // not a link (missing, a directory): "can't get remote path" is only logged (v1 :137-138)
      }
      if (remote !== null) {
        remote = remote.replace(/\\$/, "");
        const mapping = rootMappingPath(remote);
        const file = path.join(this.refDir(mapping), createHash("md5").update(volumeId.toLowerCase()).digest("hex"));
        try {
          rmSync(file); // refcounter_windows.go:95-102: os.Remove, an error when the file is missing
        } catch (e) {
          throw new Error(`decrementRemotePathReferencesCount(${mapping}, ${volumeId}) failed with error: ${(e as Error).message}`);
        }
        const count = readdirSync(this.refDir(mapping)).length; // refcounter_windows.go:106-116
        if (count === 0) {
          await this.proxy.call("smb", "removeSmbGlobalMapping", { remotePath: remote }).catch((e) => {
            throw new Error(`RemoveSmbGlobalMapping failed with error: ${(e as Error).message}`);
          });
        }
      }
    }
    await this.rmdir(target);
  }

  // ---- the node service (nodeserver.go)

  /** nodeserver.go:533-560 ensureMountPoint (Windows): IsLikelyNotMountPoint; a missing path is "not mounted". */
  async ensureMountPoint(target: string): Promise<boolean> {
    return !(await this.isLikelyNotMountPoint(target)).notMnt;
  }

  /** nodeserver.go:164-343 (Windows branch: username/password as mount options, :255-265). */
  async nodeStage(source: string, staging: string, volumeId: string, user = "CORP\\svc", password = "pw"): Promise<void> {
    const mounted = await this.ensureMountPoint(staging).catch((e) => {
      throw new CsiError("Internal", `Could not mount target ${staging}: ${(e as Error).message}`); // :299-302
    });
    if (mounted) return; // :303-304
    await this.removeDir(staging).catch((e) => {
      throw new CsiError("Unknown", `prepare stage path failed for ${staging} with error: ${(e as Error).message}`); // :306-308: not a status
    });
    await this.smbMount(source, staging, volumeId, user, password).catch((e) => {
      throw new CsiError("Internal", `volume(${volumeId}) mount "${source}" on "${staging}" failed with ${(e as Error).message}`); // :346-369
    });
  }

  /** nodeserver.go:49-135. */
  async nodePublish(staging: string, target: string): Promise<void> {
    const mounted = await this.ensureMountPoint(target).catch((e) => {
      throw new CsiError("Internal", `Could not mount target "${target}": ${(e as Error).message}`); // :112-115
    });
    if (mounted) return; // :116-119
    await this.removeDir(target).catch((e) => {
      throw new CsiError("Unknown", `prepare publish failed for ${target} with error: ${(e as Error).message}`); // :121-123: not a status
    });
    // :126-131: Mount = CreateSymlink (v1 :174-187) / LinkPath (v1beta1 :104-117)
    const link = this.version === "v1" ? this.proxy.call("filesystem", "createSymlink", { sourcePath: staging, targetPath: target }) : this.proxy.call("filesystem", "linkPath", { sourcePath: staging, targetPath: target });
    await link.catch((e) => {
      throw new CsiError("Internal", `Could not mount "${staging}" at "${target}": ${(e as Error).message}`);
    });
  }

  /** nodeserver.go:137-153: CleanupMountPoint = Rmdir (smb_common_windows.go:48-53). */
  async nodeUnpublish(target: string): Promise<void> {
    await this.rmdir(target).catch((e) => {
      throw new CsiError("Internal", `failed to unmount target "${target}": ${(e as Error).message}`);
    });
  }

  /** nodeserver.go:406-431: CleanupSMBMountPoint = SMBUnmount (smb_common_windows.go:41-46). */
  async nodeUnstage(staging: string, volumeId: string): Promise<void> {
    await this.smbUnmount(staging, volumeId).catch((e) => {
      throw new CsiError("Internal", `failed to unmount staging target "${staging}": ${(e as Error).message}`);
    });
  }
}
