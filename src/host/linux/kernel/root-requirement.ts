/** The uid csi-proxy needs to manage block devices. */
/** What the uid means for managing block devices: root is needed (block devices, mount, mkfs). */
export function rootRequirement(uid: number): string | null {
  return uid === 0 ? null : `csi-proxy must run as root to manage block devices (it runs as uid ${uid})`;
}
