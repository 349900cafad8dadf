// A client-side model of AzureFile's Windows node paths, restated from its code: filesystem v1 + smb v1
// over a mount-utils CSIProxyMounter (csi-driver-smb has its own, csi-driver-smb-model.ts).
// docs/driver-compat.md lists the sequences.
import { lstatSync } from "node:fs";
import * as path from "node:path";
import { CsiError, type Proxy } from "./replay-harness.ts";

export class SmbDriver {
  readonly proxy: Proxy;
  /** csi-driver-smb removes the global mapping with the last volume of a share; AzureFile never calls RemoveSmbGlobalMapping. */
  readonly removesMapping: boolean;
  /** The driver's own per-share reference count (RemoveSMBMappingDuringUnmount), kept in the driver. */
  readonly refs = new Map<string, Set<string>>();
  /**
   * What os.Readlink(staging) gives the driver on Windows: the remote path (upstream links to the UNC
   * path). Our Linux host links into the CIFS mount instead, so the model remembers it.
   */
  readonly linkTargets = new Map<string, string>();
  constructor(proxy: Proxy, removesMapping = true) {
    this.proxy = proxy;
    this.removesMapping = removesMapping;
  }
  async exists(p: string) {
    return ((await this.proxy.call("filesystem", "pathExists", { path: p })) as { exists: boolean }).exists;
  }
  /** mount-utils IsLikelyNotMountPoint over PathExists + IsSymlink; true = mounted. */
  async mounted(p: string) {
    if (!(await this.exists(p))) return false;
    return ((await this.proxy.call("filesystem", "isSymlink", { path: p })) as { isSymlink: boolean }).isSymlink;
  }
  /** removeDir: PathExists, then Rmdir(force) (prepareStagePath / preparePublishPath). */
  async removeDir(p: string) {
    if (await this.exists(p)) await this.proxy.call("filesystem", "rmdir", { path: p, force: true });
  }
  static root(remote: string) {
    return remote.split(/[\\/]+/).filter(Boolean).slice(0, 2).join("\\").toLowerCase();
  }

  async nodeStage(remote: string, staging: string, volumeId: string, user = "CORP\\svc", password = "pw"): Promise<void> {
    const internal = (e: unknown) => {
      throw new CsiError("Internal", (e as Error).message);
    };
    if (await this.mounted(staging).catch(internal)) return; // already staged
    await this.removeDir(staging).catch(internal);
    const parent = path.dirname(staging);
    if (!(await this.exists(parent).catch(internal))) await this.proxy.call("filesystem", "mkdir", { path: parent }).catch(internal);
    await this.proxy.call("smb", "newSmbGlobalMapping", { remotePath: remote, localPath: staging, username: user, password }).catch(internal);
    const root = SmbDriver.root(remote);
    if (!this.refs.has(root)) this.refs.set(root, new Set());
    this.refs.get(root)!.add(volumeId);
    this.linkTargets.set(staging, remote);
  }

  async nodePublish(staging: string, target: string): Promise<void> {
    const internal = (e: unknown) => {
      throw new CsiError("Internal", (e as Error).message);
    };
    if (await this.mounted(target).catch(internal)) return;
    await this.removeDir(target).catch(internal);
    await this.proxy.call("filesystem", "createSymlink", { sourcePath: staging, targetPath: target }).catch(internal);
  }

  async nodeUnpublish(target: string): Promise<void> {
    await this.proxy.call("filesystem", "rmdir", { path: target, force: true }).catch((e) => {
      throw new CsiError("Internal", (e as Error).message);
    });
  }

  /** SMBUnmount: the link is read locally; the last volume of a share root removes the global mapping; then Rmdir(force). */
  async nodeUnstage(staging: string, volumeId: string): Promise<void> {
    const internal = (e: unknown) => {
      throw new CsiError("Internal", (e as Error).message);
    };
    let isLink = false;
    try {
      isLink = lstatSync(staging).isSymbolicLink();
    } catch {
      // missing (or under a non-directory): not a link
    }
    const remote = isLink ? this.linkTargets.get(staging) : undefined;
    if (remote !== undefined && this.removesMapping) {
      const root = SmbDriver.root(remote);
      const set = this.refs.get(root);
      set?.delete(volumeId);
      if (set && set.size === 0) {
        await this.proxy.call("smb", "removeSmbGlobalMapping", { remotePath: remote }).catch(internal);
        this.refs.delete(root);
      }
    }
    await this.proxy.call("filesystem", "rmdir", { path: staging, force: true }).catch(internal);
  }
}
