import { after, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Code, CsiProxyError } from "../../../errors.ts";
import { OfflineMarksFile } from "./offline-marks-file.ts";

const dir = mkdtempSync(path.join(tmpdir(), "offline-marks-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const mark = { major: 7, minor: 3, diskSeq: "42", setReadOnly: true };

it("no file: no marks; written marks read back, in a 0600 file", async () => {
  const file = path.join(dir, "a.json");
  const marks = new OfflineMarksFile(file);
  assert.deepEqual(await marks.read(), []);
  await marks.write([mark]);
  assert.deepEqual(await marks.read(), [mark]);
  assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), { offline: [mark] });
  assert.equal(statSync(file).mode & 0o777, 0o600);
  await marks.write([]);
  assert.deepEqual(await new OfflineMarksFile(file).read(), []);
});

it("a file that is not JSON is FailedPrecondition naming it (never read as 'no marks')", async () => {
  const file = path.join(dir, "torn.json");
  writeFileSync(file, '{"offline": [{"major": 7', { mode: 0o600 });
  await assert.rejects(new OfflineMarksFile(file).read(), (e: unknown) => e instanceof CsiProxyError && e.code === Code.FailedPrecondition && e.message.includes(file));
});
