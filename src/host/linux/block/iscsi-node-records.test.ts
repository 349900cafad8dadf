/** open-iscsi node records: the CHAP lines' rewrite, the records of a target at a portal, and the start-up sweep of copies. */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { spawnSync } from "node:child_process";
import { Code, CsiProxyError } from "../../../errors.ts";
import { nodeRecordFiles, removeLeftoverRecordCopies, rewriteAuth, setRecordAuth } from "./iscsi-node-records.ts";

const P = { targetAddress: "10.0.0.5", targetPort: 3260 };
const IQN = "iqn.2024-01.com.example:storage.lun1";
const CHAP_SECRET = "chap-S3cret;$(reboot)`id`";
const RECORD = `# BEGIN RECORD 2.1.8
node.name = ${IQN}
node.session.auth.authmethod = None
node.conn[0].address = 10.0.0.5
# END RECORD
`;

describe("node record rewrite", () => {
  it("keeps other lines and replaces every auth line", () => {
    const once = rewriteAuth(RECORD, [["node.session.auth.authmethod", "CHAP"], ["node.session.auth.username", "u"], ["node.session.auth.password", "p"]]);
    const twice = rewriteAuth(once, [["node.session.auth.authmethod", "None"]]);
    assert.equal(twice, RECORD.replace("node.session.auth.authmethod = None\n", "").replace("# END RECORD", "node.session.auth.authmethod = None\n# END RECORD"));
    assert.match(once, /node\.session\.auth\.password = p\n# END RECORD\n$/);
  });

  it("finds the portal's records (a file, or a directory of iface records) and rewrites only those, 0600", async (t) => {
    const base = await fs.mkdtemp(path.join(os.tmpdir(), "iscsi-records-"));
    t.after(() => fs.rm(base, { recursive: true, force: true }));
    const nodesDir = path.join(base, "nodes");
    await fs.mkdir(path.join(nodesDir, IQN, "10.0.0.5,3260,1"), { recursive: true });
    await fs.writeFile(path.join(nodesDir, IQN, "10.0.0.5,3260,1", "default"), RECORD, { mode: 0o644 });
    await fs.writeFile(path.join(nodesDir, IQN, "10.0.0.5,3260"), RECORD);
    await fs.writeFile(path.join(nodesDir, IQN, "10.0.0.5,32600"), RECORD); // another port with the same prefix
    assert.deepEqual(await nodeRecordFiles(nodesDir, P, IQN), [path.join(nodesDir, IQN, "10.0.0.5,3260"), path.join(nodesDir, IQN, "10.0.0.5,3260,1", "default")]);
    assert.deepEqual(await nodeRecordFiles(nodesDir, P, "../x"), [], "an IQN is one path component");

    await setRecordAuth(nodesDir, P, IQN, [["node.session.auth.password", CHAP_SECRET]]);
    for (const f of await nodeRecordFiles(nodesDir, P, IQN)) {
      assert.ok((await fs.readFile(f, "utf8")).includes(`node.session.auth.password = ${CHAP_SECRET}\n# END RECORD`));
      assert.equal((await fs.stat(f)).mode & 0o777, 0o600);
    }
    assert.equal(await fs.readFile(path.join(nodesDir, IQN, "10.0.0.5,32600"), "utf8"), RECORD);
    await assert.rejects(setRecordAuth(nodesDir, { targetAddress: "10.9.9.9", targetPort: 3260 }, IQN, []), (e: CsiProxyError) => e.code === Code.NotFound && /no node record/.test(e.message));
  });
});

describe("start-up sweep of node record copies a killed daemon left", () => {
  it("removes its own dead writers' copies beside the node database; keeps live writers', links, other files", async () => {
    const base = await fs.mkdtemp(path.join(os.tmpdir(), "iscsi-copies-"));
    try {
      const etc = path.join(base, "iscsi");
      await fs.mkdir(path.join(etc, "nodes"), { recursive: true });
      const child = spawnSync(process.execPath, ["-e", ""]); // a pid that no longer runs
      const dead = child.pid!;
      const hex = "0123456789ab";
      const copy = `.10.0.0.5,3260,1.tmp-${dead}-${hex}`;
      const live = `.default.tmp-${process.pid}-${hex}`;
      const link = `.default.tmp-${dead}-ba9876543210`;
      const dirLike = `.other.tmp-${dead}-aaaaaaaaaaaa`;
      await fs.writeFile(path.join(etc, copy), `node.session.auth.password = ${CHAP_SECRET}\n`, { mode: 0o600 });
      await fs.writeFile(path.join(etc, live), "being written", { mode: 0o600 });
      await fs.writeFile(path.join(base, "elsewhere"), "not ours to remove");
      await fs.symlink(path.join(base, "elsewhere"), path.join(etc, link));
      await fs.mkdir(path.join(etc, dirLike));
      for (const other of ["initiatorname.iscsi", `.default.tmp-${dead}-XYZ`, `default.tmp-${dead}-${hex}`]) await fs.writeFile(path.join(etc, other), "x");

      const result = await removeLeftoverRecordCopies(path.join(etc, "nodes"));
      assert.deepEqual(result.removed, [copy]);
      assert.deepEqual(result.failed.sort(), [dirLike, link].sort(), "a link or directory of that name is reported, never followed");
      const left = (await fs.readdir(etc)).sort();
      assert.deepEqual(left, [dirLike, link, live, `.default.tmp-${dead}-XYZ`, `default.tmp-${dead}-${hex}`, "initiatorname.iscsi", "nodes"].sort());
      assert.equal(await fs.readFile(path.join(base, "elsewhere"), "utf8"), "not ours to remove");
      assert.deepEqual(await removeLeftoverRecordCopies(path.join(etc, "nodes")), { removed: [], failed: result.failed }, "idempotent");
    } finally {
      await fs.rm(base, { recursive: true, force: true });
    }
  });

});
