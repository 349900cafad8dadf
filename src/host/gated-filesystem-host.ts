/**
 * A {@link FilesystemHostApi} whose path operations are admitted by a {@link MountGate} (see
 * mount-gate.ts): each runs under the gate of the mount its path reaches — links on the way followed
 * where the gate follows them (the Linux one: reached-mount.ts), the last component not followed for
 * `lstat` and `symlink` (the link's path). `lookupCached` stays ungated (it never waits). The recursive deletes are not gated as one
 * operation (they run for as long as the tree is large, which the watchdog would take for a hang);
 * the path policy's resolution of their path, which precedes them, is.
 */
import type { FilesystemHostApi } from "../groups/filesystem/host-api.ts";
import type { PathResolver } from "../policy/path-resolver.ts";
import type { MountGate } from "./mount-gate.ts";

/** lstat and symlink act on the path's last component itself, never on what a link there points to. */
const NO_FOLLOW = { followLast: false };

export function gateFilesystemHost(host: FilesystemHostApi, gate: MountGate): FilesystemHostApi {
  const gated: FilesystemHostApi = {
    lstat: (p) => gate.run(p, () => host.lstat(p), undefined, NO_FOLLOW),
    realpath: (p) => gate.run(p, () => host.realpath(p)),
    mkdirAll: (p) => gate.run(p, () => host.mkdirAll(p)),
    removeDir: (p) => gate.run(p, () => host.removeDir(p)),
    removeAll: (p, o) => host.removeAll(p, o),
    removeContents: (p, o) => host.removeContents(p, o),
    readDir: (p) => gate.run(p, () => host.readDir(p)),
    symlink: (target, linkPath) => gate.run(linkPath, () => host.symlink(target, linkPath), undefined, NO_FOLLOW),
    linkTargetExists: (p) => gate.run(p, () => host.linkTargetExists(p)),
    isMountPoint: (p) => gate.run(p, () => host.isMountPoint(p)),
  };
  if (host.lookupCached) gated.lookupCached = host.lookupCached.bind(host);
  return gated;
}

/** The path policy's resolver under the gate of the path's mount. */
export function gateResolver(resolve: PathResolver, gate: MountGate): PathResolver {
  return (p) => gate.run(p, () => resolve(p));
}
