/**
 * LinuxSmbHost against a recording `mount` (this kernel has no cifs module, so mount.cifs cannot
 * run here). Proven for real: the argv handed to mount (never the password), the child's
 * environment (no PASSWD), the credentials file (mode 0600, owner root, in a 0700 directory,
 * exact content) while mount runs and its deletion afterwards whatever mount's outcome, the error
 * codes for mount.cifs failures, and — with the recorder performing a real tmpfs mount of the
 * same source at the same directory — mapping detection from the mount table, the reachability
 * probe, unmounting and the links into the mount.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { Code, CsiProxyError } from "../../errors.ts";
import { LinuxSmbHost } from "./smb.ts";
import { isRoot, MOUNT_TMPFS_INSTEAD, recordingProgram, type RecordingProgram } from "../../../test/integration/smb-iscsi-system-fixtures.ts";
import { readMountTable } from "./kernel/mountinfo.ts";
import { runCommand } from "../exec/run-command.ts";

const PASSWORD = "Pw-5ecret;$(id)`x` 'q\" %PATH% | & end";
const ROOT = "\\\\fileserver.example\\data";

let dir: string;
let mount: RecordingProgram;
let host: LinuxSmbHost;

before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "linux-smb-"));
  mount = await recordingProgram(dir, "mount");
  host = new LinuxSmbHost({ stateDir: path.join(dir, "state"), mountCommand: mount.path });
});
after(async () => {
  for (const m of (await readMountTable()).filter((e) => e.mountPoint.startsWith(dir)).reverse()) {
    await runCommand("umount", ["-l", m.mountPoint]).catch(() => {});
  }
  await fs.rm(dir, { recursive: true, force: true });
});

describe("LinuxSmbHost.createMapping", () => {
  it("passes credentials only through a 0600 file that is deleted afterwards", async () => {
    await mount.behave({});
    await host.createMapping(ROOT, "CORP\\alice", PASSWORD, true);
    const [inv] = (await mount.invocations()).slice(-1);
    const mountDir = host.mountDirFor(ROOT);
    assert.deepEqual(inv.argv.slice(0, 5), ["-t", "cifs", "//fileserver.example/data", mountDir, "-o"]);
    assert.match(inv.argv[5], /^credentials=[^,]+,seal$/);
    for (const arg of inv.argv) assert.ok(!arg.includes("5ecret"), `password on argv: ${arg}`);
    assert.deepEqual(Object.keys(inv.env).sort(), ["LANG", "LC_ALL", "PATH"], "no PASSWD/USER in the environment");
    assert.equal(inv.stdin, "");
    assert.ok(inv.credentials);
    assert.equal(inv.credentials.mode, 0o600);
    assert.equal(inv.credentials.dirMode, 0o700);
    assert.equal(inv.credentials.uid, process.getuid?.());
    assert.equal(inv.credentials.content, `username=alice\npassword=${PASSWORD}\ndomain=CORP\n`);
    assert.ok(inv.credentials.path.startsWith(path.join(dir, "state", "smb", "credentials") + "/"));
    await assert.rejects(fs.stat(inv.credentials.path), { code: "ENOENT" });
    assert.equal((await fs.stat(path.join(dir, "state"))).mode & 0o011, 0o011, "links into the mounts can be followed by others");
    assert.deepEqual(await fs.readdir(path.join(dir, "state", "smb", "credentials")), []);
  });

  it("deletes the credentials file when mount fails too, and maps mount.cifs errors to codes", async () => {
    const cases: [string, number, Code][] = [
      ["mount error(13): Permission denied\n", 32, Code.PermissionDenied],
      ["mount error(2): No such file or directory\n", 32, Code.NotFound],
      ["mount error(113): could not connect to 10.0.0.1Unable to find suitable address.\n", 32, Code.FailedPrecondition],
      ["mount error(19): No such device\n", 32, Code.FailedPrecondition],
      ["mount: /x: unknown filesystem type 'cifs'.\n", 32, Code.FailedPrecondition],
      ["something else\n", 1, Code.FailedPrecondition],
    ];
    for (const [stderr, exitCode, code] of cases) {
      await mount.behave({ stderr, exitCode });
      await assert.rejects(host.createMapping(ROOT, "bob", PASSWORD, false), (e: unknown) => {
        assert.ok(e instanceof CsiProxyError);
        assert.equal(e.code, code, stderr);
        assert.ok(!e.message.includes("5ecret"));
        return true;
      });
      const [inv] = (await mount.invocations()).slice(-1);
      assert.match(inv.argv[5], /^credentials=[^,]+$/, "no seal without -require-privacy");
      await assert.rejects(fs.stat(inv.credentials!.path), { code: "ENOENT" });
    }
  });

  it("mounts as guest, with no credentials file, when the user name is empty", async () => {
    await mount.behave({});
    await host.createMapping(ROOT, "", "", true);
    const [inv] = (await mount.invocations()).slice(-1);
    assert.equal(inv.argv[5], "guest,seal");
    assert.equal(inv.credentials, undefined);
  });

  it("reports a missing mount program as FailedPrecondition", async () => {
    const h = new LinuxSmbHost({ stateDir: path.join(dir, "state2"), mountCommand: path.join(dir, "no-such-mount") });
    await assert.rejects(h.createMapping(ROOT, "u", "p", true), (e: CsiProxyError) => e.code === Code.FailedPrecondition && /not installed/.test(e.message));
  });
});

describe("LinuxSmbHost with a real mount at the mapping directory (tmpfs standing in for CIFS)", { skip: !isRoot && "needs root to mount" }, () => {
  it("detects, probes, links into and removes the mapping", async () => {
    await mount.behave(MOUNT_TMPFS_INSTEAD);
    assert.equal(await host.getMapping(ROOT), null);
    assert.equal(await host.isPathValid(ROOT), false);
    await host.createMapping(ROOT, "alice", PASSWORD, true);
    const mountDir = host.mountDirFor(ROOT);
    const entry = (await readMountTable()).find((m) => m.mountPoint === mountDir);
    assert.equal(entry?.source, "//fileserver.example/data");
    assert.deepEqual(await host.getMapping(ROOT), { status: "OK" });
    assert.equal(await host.isPathValid(ROOT), true);

    await fs.mkdir(path.join(mountDir, "Sub", "Dir"), { recursive: true });
    await fs.writeFile(path.join(mountDir, "Sub", "Dir", "hello.txt"), "hi");
    const link = path.join(dir, "kubelet", "globalmount");
    await fs.mkdir(path.dirname(link), { recursive: true });
    assert.equal(await host.readDirLink(link), null);
    await host.createDirLink(link, "\\\\FileServer.example\\Data\\Sub\\Dir");
    assert.equal(await fs.readFile(path.join(link, "hello.txt"), "utf8"), "hi");
    assert.deepEqual(await host.readDirLink(link), { target: host.linkTargetFor("\\\\FileServer.example\\Data\\Sub\\Dir") });
    assert.deepEqual(await host.readDirLink(path.dirname(link)), { target: null });
    await assert.rejects(host.createDirLink(link, "\\\\x\\y"), (e: CsiProxyError) => e.code === Code.AlreadyExists);

    await host.removeMapping(ROOT);
    assert.equal(await host.getMapping(ROOT), null);
    assert.equal((await readMountTable()).some((m) => m.mountPoint === mountDir), false);
    await assert.rejects(fs.stat(mountDir), { code: "ENOENT" });
  });

  it("removes a busy mapping lazily (Windows removes with -Force)", async () => {
    await mount.behave(MOUNT_TMPFS_INSTEAD);
    await host.createMapping(ROOT, "alice", PASSWORD, true);
    const handle = await fs.open(path.join(host.mountDirFor(ROOT), "open-file"), "w");
    try {
      await host.removeMapping(ROOT);
      assert.equal(await host.getMapping(ROOT), null);
    } finally {
      await handle.close();
    }
  });
});

describe("LinuxSmbHost.removeUnusedMappingDirs (start-up sweep)", () => {
  it("removes only empty, unmounted mapping directories no root uses; never a link, content or a look-alike", async () => {
    const state = path.join(dir, "sweep-state");
    const sweepHost = new LinuxSmbHost({ stateDir: state, mountCommand: mount.path });
    const mounts = path.join(state, "smb", "mounts");
    await fs.mkdir(mounts, { recursive: true, mode: 0o755 });
    await fs.chmod(state, 0o700);
    const used = "\\\\srv\\used";
    const name = (root: string) => path.basename(sweepHost.mountDirFor(root));
    const outside = path.join(dir, "sweep-outside");
    await fs.mkdir(outside);
    await fs.mkdir(path.join(mounts, name(used)));
    await fs.mkdir(path.join(mounts, name("\\\\srv\\gone-1")));
    await fs.mkdir(path.join(mounts, name("\\\\srv\\gone-2")));
    await fs.mkdir(path.join(mounts, name("\\\\srv\\with-content")));
    await fs.writeFile(path.join(mounts, name("\\\\srv\\with-content"), "data"), "x");
    await fs.symlink(outside, path.join(mounts, name("\\\\srv\\planted-link")));
    await fs.mkdir(path.join(mounts, "not-a-mapping"));
    let mounted: string | undefined;
    if (isRoot) {
      mounted = path.join(mounts, name("\\\\srv\\mounted-unrecorded"));
      await fs.mkdir(mounted);
      await runCommand("mount", ["-t", "tmpfs", "-o", "size=64k", "sweep-test", mounted]);
    }
    const removed = await sweepHost.removeUnusedMappingDirs([used]);
    assert.deepEqual(removed.sort(), [name("\\\\srv\\gone-1"), name("\\\\srv\\gone-2")].sort());
    const left = (await fs.readdir(mounts)).sort();
    const expected = [name(used), name("\\\\srv\\with-content"), name("\\\\srv\\planted-link"), "not-a-mapping", ...(mounted ? [path.basename(mounted)] : [])].sort();
    assert.deepEqual(left, expected);
    assert.ok((await fs.lstat(outside)).isDirectory(), "the link's target is untouched");
    if (mounted) await runCommand("umount", [mounted]);
    // nothing to sweep, nothing created
    const empty = new LinuxSmbHost({ stateDir: path.join(dir, "sweep-none"), mountCommand: mount.path });
    assert.deepEqual(await empty.removeUnusedMappingDirs([]), []);
    await assert.rejects(fs.lstat(path.join(dir, "sweep-none")));
  });
});
