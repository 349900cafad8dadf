// e2fsprogs on an image file (no device needed): create, measure, check, grow; statfs of /.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createFilesystemTools } from "./filesystem-tools.ts";
import { Code } from "../../../errors.ts";

const MiB = 1024 * 1024;
const missing = ["mkfs.ext4", "dumpe2fs", "e2fsck", "resize2fs"].find((t) => spawnSync(t, ["-V"], { stdio: "ignore" }).error);

it("statfs of a mounted filesystem: its own figures", async () => {
  const usage = await createFilesystemTools().statfs("/");
  const s = statfsSync("/", { bigint: true });
  assert.equal(usage.totalBytes, s.blocks * s.bsize);
  assert.ok(usage.freeBytes <= usage.totalBytes);
  await assert.rejects(createFilesystemTools().statfs("/csi-proxy-no-such-dir"), { code: Code.NotFound });
});

describe("ext4 on an image file", { skip: missing ? `${missing} missing (scripts/install-linux-tools.sh)` : false }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-fs-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const image = (name: string, bytes: number) => {
    const file = path.join(dir, name);
    const fd = openSync(file, "w");
    ftruncateSync(fd, bytes);
    closeSync(fd);
    return file;
  };

  it("made, measured from its superblock, checked, grown to fill its file", async () => {
    const fs = createFilesystemTools();
    const file = image("ext4.img", 16 * MiB);
    await fs.makeFilesystem(file, "ext4");
    const made = await fs.readFilesystemUsage(file, "ext4");
    assert.ok(made.totalBytes > 15n * BigInt(MiB) && made.totalBytes <= 16n * BigInt(MiB), `${made.totalBytes}`);
    assert.ok(made.freeBytes > 0n && made.freeBytes < made.totalBytes);
    await fs.checkFilesystem(file, "ext4");
    const fd = openSync(file, "r+");
    ftruncateSync(fd, 32 * MiB);
    closeSync(fd);
    await fs.growFilesystem(file, "ext4", null);
    const grown = await fs.readFilesystemUsage(file, "ext4");
    assert.ok(grown.totalBytes > 31n * BigInt(MiB), `${grown.totalBytes}`);
  });

  it("an unreadable superblock is the tool's refusal (FailedPrecondition), not a made-up size", async () => {
    const fs = createFilesystemTools();
    const blank = image("blank.img", 4 * MiB);
    await assert.rejects(fs.readFilesystemUsage(blank, "ext4"), { code: Code.FailedPrecondition });
    await assert.rejects(fs.checkFilesystem(blank, "ext4"), { code: Code.FailedPrecondition });
  });

  it("xfs_growfs needs a mount point", async () => {
    await assert.rejects(createFilesystemTools().growFilesystem("/dev/null", "xfs", null), { code: Code.Internal, message: /mount point/ });
  });
});
