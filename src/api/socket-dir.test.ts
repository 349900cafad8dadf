/**
 * secureSocketDir (socket-dir.ts): a directory others could write is refused with one fix-it line and
 * left as it was; a missing one is created 0700; system links among the parents and a per-user
 * directory in a sticky /tmp are accepted. The daemon's own refusal (exit 2, nothing served) is in
 * test/integration/daemon-lifecycle.test.ts.
 */
import assert from "node:assert/strict";
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import { Code } from "../errors.ts";
import { secureSocketDir } from "./socket-dir.ts";

const uid = process.getuid!();
const root = mkdtempSync(path.join(tmpdir(), "socket-dir-"));
after(() => rmSync(root, { recursive: true, force: true }));
const mode = (p: string) => lstatSync(p).mode & 0o7777;

function refused(dir: string, pattern: RegExp, code: Code = Code.FailedPrecondition) {
  assert.throws(
    () => secureSocketDir(dir, uid),
    (err: Error & { code?: Code }) => {
      assert.equal(err.code, code);
      assert.match(err.message, pattern);
      assert.doesNotMatch(err.message, /\n/, "one line");
      return true;
    },
  );
}

describe("secureSocketDir", () => {
  it("creates a missing directory 0700 (missing parents 0755) and accepts it again", () => {
    const dir = path.join(root, "new", "sockets");
    secureSocketDir(dir, uid);
    assert.equal(mode(dir), 0o700);
    assert.equal(mode(path.dirname(dir)), 0o755);
    secureSocketDir(dir, uid);
  });

  it("refuses a group/world-writable directory (0777) and leaves its mode alone", () => {
    const dir = path.join(root, "open");
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    refused(dir, /^-socket-dir \S+open is group- or world-writable \(mode 0777\): others could replace its sockets; refusing it \(fix: chmod 0700 \S+open\)$/);
    assert.equal(mode(dir), 0o777, "not repaired");
    chmodSync(dir, 0o770);
    refused(dir, /mode 0770/);
  });

  it("refuses a directory another user owns, naming both uids and the chown that fixes it", () => {
    const dir = path.join(root, "foreign");
    mkdirSync(dir, { mode: 0o700 });
    const other = uid === 0 ? 4242 : uid + 1;
    try {
      chownSync(dir, other, other);
    } catch {
      assert.fail("the test needs to chown (run as root)");
    }
    refused(dir, new RegExp(`is owned by uid ${other}, not the daemon's uid ${uid}.*fix: chown ${uid} \\S+foreign && chmod 0700 \\S+foreign\\)$`));
    assert.equal(statSync(dir).uid, other, "not repaired");
  });

  it("refuses a symlink as the final directory (even to a good one), but follows system links among the parents", () => {
    const real = path.join(root, "real");
    mkdirSync(real, { mode: 0o700 });
    const link = path.join(root, "link");
    symlinkSync(real, link);
    refused(link, /link is a symbolic link to \S+real: .*fix: rm \S+link \(csi-proxy creates it\), or pass the real directory as -socket-dir\)$/);
    // a parent that is a link (as /var/run → /run): fine
    secureSocketDir(path.join(link, "sockets"), uid);
    assert.equal(mode(path.join(real, "sockets")), 0o700);
  });

  it("refuses a relative path with InvalidArgument, creating nothing", () => {
    refused("csi-proxy-rel", /^-socket-dir "csi-proxy-rel" must be an absolute path \(for example \/\S+\/csi-proxy-rel\)$/, Code.InvalidArgument);
    assert.throws(() => lstatSync(path.resolve("csi-proxy-rel")), { code: "ENOENT" });
  });

  it("accepts a per-user directory in a sticky world-writable parent (/tmp), refuses one in a non-sticky one", () => {
    const sticky = path.join(root, "tmp-like");
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    secureSocketDir(path.join(sticky, "csi-proxy-1000"), uid);
    const open = path.join(root, "open-parent");
    mkdirSync(open);
    chmodSync(open, 0o777);
    refused(path.join(open, "sockets"), /has a parent \S+open-parent writable by others without the sticky bit \(mode 0777\).*fix: chmod go-w \S+open-parent\)$/);
  });

  it("refuses a file in its place, and says which system call failed when it cannot be created", () => {
    const file = path.join(root, "file");
    writeFileSync(file, "");
    refused(file, /file is not a directory/);
    refused(path.join(file, "sub"), /cannot create \S+sub: ENOTDIR/);
  });
});
