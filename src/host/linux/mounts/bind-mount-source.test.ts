import { test } from "node:test";
import assert from "node:assert/strict";
import { bindSources } from "./bind-mount-source.ts";
import { parseMountInfo } from "../kernel/mountinfo.ts";

// mountinfo: id parent major:minor root mountpoint options - type source superopts
const table = parseMountInfo(
  [
    "20 1 8:1 / / rw - ext4 /dev/sda1 rw",
    "30 20 8:1 /outside/data /var/lib/kubelet/pods/x/bind rw - ext4 /dev/sda1 rw",
    "31 20 8:1 /var/lib/kubelet/pods/y/src /var/lib/kubelet/pods/y/sub rw - ext4 /dev/sda1 rw",
    "32 20 0:50 / /var/lib/kubelet/pods/z/tmpfs rw - tmpfs tmpfs rw",
    "33 20 8:2 /dir /var/lib/kubelet/pods/z/orphan rw - ext4 /dev/sda2 rw",
    "40 20 8:3 / /data rw - ext4 /dev/sdb1 rw",
    "41 20 8:3 /kubelet /srv/kubelet rw - ext4 /dev/sdb1 rw",
    "42 30 8:1 /etc /var/lib/kubelet/pods/x/bind/stacked rw - ext4 /dev/sda1 rw",
  ].join("\n"),
);

test("bindSources: where a path inside a bind mount of a directory really lies", () => {
  assert.deepEqual(
    bindSources(
      [
        "/var/lib/kubelet/pods/x/bind",
        "/var/lib/kubelet/pods/x/bind/a/b",
        "/var/lib/kubelet/pods/y/sub/c",
        "/var/lib/kubelet/pods/z/tmpfs/d",
        "/var/lib/kubelet/pods/z/orphan/e",
        "/var/lib/kubelet/plain",
        "/srv/kubelet/pods",
        "/var/lib/kubelet/pods/x/bind/stacked/passwd",
      ],
      table,
    ),
    [
      "/outside/data",
      "/outside/data/a/b",
      "/var/lib/kubelet/pods/y/src/c",
      null, // a whole filesystem (tmpfs)
      { unseen: "/var/lib/kubelet/pods/z/orphan" }, // the filesystem is mounted nowhere else: where it lies cannot be seen
      null, // the root filesystem itself
      "/data/kubelet/pods", // through the widest other mount of the same filesystem
      "/etc/passwd", // the deepest mount wins
    ],
  );
});

test("bindSources: a chroot's view (its root filesystem not visible) and btrfs subvolumes", () => {
  const chroot = parseMountInfo(
    [
      "50 49 0:60 / /proc rw - proc proc rw",
      "60 49 8:1 /outside /var/lib/kubelet/bind rw - ext4 /dev/sda1 rw",
      "70 49 8:5 /@vol /var/lib/kubelet/pods/p/vol rw - btrfs /dev/sdc1 rw,space_cache=v2,subvolid=256,subvol=/@vol",
      "71 49 8:5 /@vol/dir /var/lib/kubelet/pods/p/bind rw - btrfs /dev/sdc1 rw,space_cache=v2,subvolid=256,subvol=/@vol",
    ].join("\n"),
  );
  assert.deepEqual(bindSources(["/var/lib/kubelet/bind/x", "/var/lib/kubelet/plain", "/var/lib/kubelet/pods/p/vol/a", "/var/lib/kubelet/pods/p/bind/b"], chroot), [
    { unseen: "/var/lib/kubelet/bind" }, // a bind of a directory of a filesystem mounted nowhere visible
    null, // no mount holds it at all
    null, // a subvolume mount: a whole tree
    "/var/lib/kubelet/pods/p/vol/dir/b", // a bind of a directory inside that subvolume, seen through it
  ]);
});
