// securePrivateDir (private-dir.ts): created 0700 when missing; an existing directory others could
// write, a link or a non-directory refused — never repaired — through the caller's own refusal.
import { it } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Code, CsiProxyError } from "../errors.ts";
import { securePrivateDir, type PrivateDirNames } from "./private-dir.ts";

const names = (dir: string): PrivateDirNames => ({ label: `-x ${dir}`, flag: "-x", owner: "the test's", refuse: (what, fix) => new CsiProxyError(Code.FailedPrecondition, `-x ${dir} ${what} (fix: ${fix})`) });
const uid = process.getuid?.() ?? 0;

function refused(dir: string, pattern: RegExp): void {
  assert.throws(() => securePrivateDir(dir, names(dir), uid), (e: unknown) => e instanceof CsiProxyError && e.code === Code.FailedPrecondition && pattern.test(e.message));
}

it("creates a missing directory 0700 (and its missing parents), then accepts it as it is; refuses what others could write", { skip: process.platform !== "linux" && "POSIX modes" }, () => {
  const root = mkdtempSync(path.join(tmpdir(), "private-dir-"));
  try {
    const dir = path.join(root, "a", "b");
    securePrivateDir(dir, names(dir), uid);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    securePrivateDir(dir, names(dir), uid);
    chmodSync(dir, 0o770);
    refused(dir, /is group- or world-writable \(mode 0770\) \(fix: chmod 0700 /);
    chmodSync(dir, 0o700);
    const link = path.join(root, "link");
    symlinkSync(dir, link);
    refused(link, /is a symbolic link to .*fix: rm \S+link \(csi-proxy creates it\), or pass the real directory as -x\)$/);
    const file = path.join(root, "file");
    writeFileSync(file, "");
    refused(file, /is not a directory \(fix: rm \S+file \(csi-proxy creates it\), or choose another -x\)$/);
    const open = path.join(root, "open");
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    refused(path.join(open, "d"), /has a parent \S+open writable by others without the sticky bit \(mode 0777\) \(fix: chmod go-w /);
    chmodSync(open, 0o1777);
    securePrivateDir(path.join(open, "d"), names(path.join(open, "d")), uid);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
