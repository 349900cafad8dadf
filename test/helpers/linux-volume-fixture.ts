/**
 * The fixture of the Linux volume suites (src/host/linux/volume*.test.ts): the unified volume
 * service (and disk service) over LinuxVolumeHost / LinuxDiskHost, on the fake Linux block tools.
 */
import { createVolumeService } from "../../src/groups/volume/volume-service.ts";
import type { ManagedFsType } from "../../src/host/linux/block/block-types.ts";
import { createDiskService } from "../../src/groups/disk/disk-service.ts";
import { LinuxDiskHost } from "../../src/host/linux/disk.ts";
import { LinuxVolumeHost } from "../../src/host/linux/volume.ts";
import { createPathPolicy } from "../../src/policy/path-policy.ts";
import { createKeyedMutex } from "../../src/util/keyed-mutex.ts";
import { FakeBlockWorld } from "../doubles/fake-block-world.ts";
import { FakeBlockTools } from "../doubles/fake-block-tools.ts";

export const KUBELET = "/var/lib/kubelet";
export const STAGE = `${KUBELET}/plugins/kubernetes.io/csi/pv/globalmount`;
export const MiB = 1024n * 1024n;
export const MSR = "e3c9e316-0b5c-4db8-817d-f92df00215ae";
/** Volume ids the fake gives GPT partitions, in creation order. */
export const gptId = (n: number) => `\\\\?\\Volume{00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}}\\`;

/**
 * Root disk vda (whole-disk ext4 on /), loop3 with one 512 MiB partition (volume gptId(1), /dev/loop3p1)
 * on a 1 GiB disk, an empty staging directory under the kubelet dir.
 */
export function setup(options: { tweak?: (w: FakeBlockWorld) => void; fsType?: ManagedFsType; log?: { info(m: string): void; warning(m: string): void } } = {}) {
  const world = new FakeBlockWorld();
  world.addDisk({ name: "vda", major: 254, minor: 0, sizeBytes: 256n * 1024n * MiB });
  world.putFilesystem("/dev/vda", "ext4");
  world.mountDirect("/dev/vda", "/");
  world.addLoop(3, "/images/a.img");
  world.partition("loop3", [512]);
  world.mkdir(STAGE);
  world.mkdir("/mnt/admin");
  options.tweak?.(world);
  const tools = new FakeBlockTools(world);
  const host = new LinuxVolumeHost(tools, { defaultFileSystem: options.fsType ?? "ext4", log: options.log });
  const policy = createPathPolicy({ platform: "linux", allowedDirs: [KUBELET], resolve: async (p) => p });
  const locks = createKeyedMutex();
  const volume = createVolumeService({ host, policy, locks });
  const disk = createDiskService({ host: new LinuxDiskHost(tools), policy, locks });
  return { world, host, volume, disk, id: gptId(1), dev: "/dev/loop3p1" };
}

export const formatted = (w: FakeBlockWorld, type = "ext4") => w.putFilesystem("/dev/loop3p1", type, ["precious"]);

