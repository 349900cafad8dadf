/**
 * findNodeDatabase (iscsi-node-db.ts): the path compiled into the installed open-iscsi decides
 * (Debian 12's /etc/iscsi/nodes, Debian 13's /var/lib/iscsi/nodes), then the directory that exists,
 * then /etc/iscsi/nodes; -iscsi-node-db overrides. Binaries are made here, one per layout; the
 * machine's own iscsiadm, when installed, agrees with the directory its package made.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import { compiledIn, findNodeDatabase } from "./iscsi-node-db.ts";

const dir = mkdtempSync(path.join(tmpdir(), "iscsi-node-db-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in for a binary: some bytes, the given C strings, more bytes. */
function binary(name: string, ...strings: string[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, Buffer.concat([Buffer.alloc(4096, 0x7f), ...strings.map((s) => Buffer.from(`${s}\0`, "latin1")), Buffer.alloc(4096, 0x90)]));
  return file;
}
const noDirs = () => false;

describe("findNodeDatabase", () => {
  it("Debian 12's layout compiled in: /etc/iscsi/nodes", () => {
    const bin = binary("iscsiadm-bookworm", "/etc/iscsi", "/etc/iscsi/nodes", "/etc/iscsi/send_targets");
    assert.deepEqual(findNodeDatabase({ binaries: [bin], isDir: noDirs }), { dir: "/etc/iscsi/nodes", how: `compiled into ${bin}` });
  });

  it("Debian 13's layout compiled in: /var/lib/iscsi/nodes, even when /etc/iscsi/nodes exists", () => {
    const bin = binary("iscsiadm-trixie", "/etc/iscsi", "/var/lib/iscsi/nodes", "/var/lib/iscsi/send_targets");
    assert.equal(findNodeDatabase({ binaries: [bin], isDir: (p) => p === "/etc/iscsi/nodes" }).dir, "/var/lib/iscsi/nodes");
  });

  it("a binary naming neither or both does not decide: the next one does, then the directory that exists, then /etc/iscsi/nodes", () => {
    const neither = binary("neither", "/etc/iscsi/iscsid.conf");
    const both = binary("both", "/etc/iscsi/nodes", "/var/lib/iscsi/nodes");
    const lib = binary("libopeniscsiusr.so.0", "/var/lib/iscsi/nodes");
    assert.equal(findNodeDatabase({ binaries: [neither, both, lib], isDir: noDirs }).dir, "/var/lib/iscsi/nodes");
    assert.deepEqual(findNodeDatabase({ binaries: [neither, both], isDir: (p) => p === "/var/lib/iscsi/nodes" }), { dir: "/var/lib/iscsi/nodes", how: "the one that exists" });
    assert.deepEqual(findNodeDatabase({ binaries: [path.join(dir, "absent")], isDir: noDirs }), { dir: "/etc/iscsi/nodes", how: "default" });
    // a prefix of a longer string is not the path
    assert.deepEqual(compiledIn(binary("prefix", "/var/lib/iscsi/nodes.old")), []);
  });

  it("-iscsi-node-db wins over what the tools say", () => {
    const bin = binary("iscsiadm-any", "/etc/iscsi/nodes");
    assert.deepEqual(findNodeDatabase({ override: "/srv/iscsi/nodes", binaries: [bin] }), { dir: "/srv/iscsi/nodes", how: "-iscsi-node-db" });
  });

  it("the machine's open-iscsi, when installed, is read to the path its package uses", (t) => {
    if (!existsSync("/usr/sbin/iscsiadm")) {
      t.diagnostic("open-iscsi not installed: the made-up binaries above cover the rules");
      return;
    }
    const found = findNodeDatabase();
    assert.match(found.how, /^compiled into /);
    assert.ok(found.dir === "/etc/iscsi/nodes" || found.dir === "/var/lib/iscsi/nodes", found.dir);
  });
});
