/** Mount lookups in a snapshot: by device, by point (the last mounted there wins), by path (deepest). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mountAt, mountHoldingPath, mountsOf, rootMount } from "./snapshot-mounts.ts";

const m = (minor: number, mountPoint: string) => ({ major: 8, minor, mountPoint, fsType: "ext4", source: `/dev/sd${minor}` });
const mounts = [m(1, "/"), m(2, "/data"), m(3, "/data"), m(2, "/data/sub/x")];

test("mountsOf lists a device's mounts in table order", () => {
  assert.deepEqual(mountsOf({ mounts }, { major: 8, minor: 2 }).map((x) => x.mountPoint), ["/data", "/data/sub/x"]);
  assert.deepEqual(mountsOf({ mounts }, { major: 9, minor: 2 }), []);
});

test("mountAt: the visible (last) mount at the point; rootMount at /", () => {
  assert.equal(mountAt({ mounts }, "/data")?.minor, 3);
  assert.equal(mountAt({ mounts }, "/nowhere"), undefined);
  assert.equal(rootMount({ mounts })?.minor, 1);
});

test("mountHoldingPath: the deepest mount point at or above the path", () => {
  assert.equal(mountHoldingPath({ mounts }, "/data/sub/x/file")?.mountPoint, "/data/sub/x");
  assert.equal(mountHoldingPath({ mounts }, "/data/sub")?.minor, 3);
  assert.equal(mountHoldingPath({ mounts }, "/etc")?.minor, 1);
  assert.equal(mountHoldingPath({ mounts: [m(2, "/data")] }, "/etc"), undefined);
});
