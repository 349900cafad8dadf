import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseMountInfo, type MountEntry } from "./mountinfo.ts";

/** The straightforward reading of proc(5): split lines and fields, decode every `\ooo` with a regex. */
function referenceParse(text: string): MountEntry[] {
  const decode = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  const out: MountEntry[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    const f = line.split(" ");
    const sep = f.indexOf("-", 6);
    if (sep < 0) continue;
    out.push({ mountId: Number(f[0]), parentId: Number(f[1]), device: f[2], root: decode(f[3]), mountPoint: decode(f[4]), fsType: f[sep + 1], source: decode(f[sep + 2] ?? ""), superOptions: f[sep + 3] ?? "" });
  }
  return out;
}

/** A kubelet-like table of `n` bind mounts, every tenth with escaped characters in its paths unless `plain`. */
function bigTable(n: number, plain = false): string {
  const lines = ["22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw"];
  for (let i = 0; i < n; i++) {
    const name = i % 10 === 0 && !plain ? `pvc\\040${i}\\011x\\134y` : `pvc-${i}`;
    lines.push(`${100 + i} 22 254:0 /data/${name} /var/lib/kubelet/pods/${i}/volumes/${name}/mount rw,relatime ${i % 3 === 0 ? "shared:7 master:2 " : ""}- ext4 /dev/vda rw,discard`);
  }
  return lines.join("\n") + "\n";
}

test("parseMountInfo: escapes (space, tab, newline, backslash) decoded in root, mount point and source", () => {
  const [m] = parseMountInfo("36 35 98:0 /a\\040b /mnt/with\\040space\\011tab\\012nl\\134bs rw,noatime master:1 - ext3 /dev/my\\040disk rw,errors=continue\n");
  assert.deepEqual(m, { mountId: 36, parentId: 35, device: "98:0", root: "/a b", mountPoint: "/mnt/with space\ttab\nnl\\bs", fsType: "ext3", source: "/dev/my disk", superOptions: "rw,errors=continue" });
});

test("parseMountInfo: a backslash not followed by three octal digits is kept; escapes at a field's end", () => {
  const [m] = parseMountInfo("1 0 0:1 / /x\\9y\\04\\040 rw - tmpfs a\\040 rw");
  assert.equal(m.mountPoint, "/x\\9y\\04 ");
  assert.equal(m.source, "a ");
});

test("parseMountInfo: optional fields (none, one, several) before the separator; absent source and super options", () => {
  const t = parseMountInfo(
    [
      "10 1 0:5 / /a rw - tmpfs tmpfs rw",
      "11 1 0:5 / /b rw shared:3 - tmpfs tmpfs rw,size=4k",
      "12 1 0:5 / /c rw shared:3 master:1 propagate_from:2 unbindable - fuse.sshfs user@h:/x rw,user_id=0",
      "13 1 0:5 / /d rw - proc",
      "14 1 0:5 / /e rw no separator here",
      "",
    ].join("\n"),
  );
  assert.deepEqual(t.map((m) => [m.mountId, m.mountPoint, m.fsType, m.source, m.superOptions]), [
    [10, "/a", "tmpfs", "tmpfs", "rw"],
    [11, "/b", "tmpfs", "tmpfs", "rw,size=4k"],
    [12, "/c", "fuse.sshfs", "user@h:/x", "rw,user_id=0"],
    [13, "/d", "proc", "", ""],
  ]);
});

test("parseMountInfo equals the reference reading on a 20 000-mount table and on this process's table", () => {
  const big = bigTable(20_000);
  const parsed = parseMountInfo(big);
  assert.equal(parsed.length, 20_001);
  assert.deepEqual(parsed, referenceParse(big));
  const live = readFileSync("/proc/self/mountinfo", "utf8");
  assert.deepEqual(parseMountInfo(live), referenceParse(live));
});

test("parseMountInfo is linear in the table: 10x the mounts costs far less than 100x the time", () => {
  // No escapes at all (as on most nodes): a search for a backslash must stop at the field's end.
  const small = bigTable(2_000, true);
  const large = bigTable(20_000, true);
  const best = (text: string) => {
    let min = Infinity;
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      parseMountInfo(text);
      min = Math.min(min, performance.now() - t0);
    }
    return min;
  };
  best(small); // warm the compilers
  const ratio = best(large) / Math.max(best(small), 0.05);
  // Linear: ~10; a scan to the end of the text per field (quadratic) gives ~100 and more.
  assert.ok(ratio < 40, `20 000 mounts took ${ratio.toFixed(1)}x the time of 2 000`);
});
