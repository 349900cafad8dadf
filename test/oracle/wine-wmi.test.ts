// The rule that takes v1.3.0 rows showing Wine's WMI out of the comparison (wine-wmi.ts): each of
// its three conditions is needed, on the recorded answers' own shapes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { shownByWineWmi } from "./wine-wmi.ts";
import type { RecordedRow } from "./compare.ts";
import { Code } from "../../src/errors.ts";

const row = (over: Partial<RecordedRow>): RecordedRow => ({ id: "g/v/M/c", group: "g", version: "v", method: "M", request: {}, ...over });
const wmiFailure = "error remove smb mapping '\\\\server\\share'. err: failed to connect to WMI. error: error 2147614729 (FormatMessage failed with: Message 0x%1 not found in file %2.) (<nil>)";
const reachedPs = row({ powershell: true, code: 2, message: "…" });
const hostAnswer = { code: Code.NotFound, message: "no SMB global mapping" };

test("a WMI failure or an all-empty list, after v1.1.3 ran PowerShell, against our host's answer: not compared", () => {
  assert.equal(shownByWineWmi(row({ code: 2, message: wmiFailure }), reachedPs, hostAnswer), true);
  assert.equal(shownByWineWmi(row({ code: 2, message: "failed to get service x. error: Not Found" }), reachedPs, hostAnswer), true);
  assert.equal(shownByWineWmi(row({ code: 2, message: "error getting the closest volume for the path=C:\\k\\dir, err=Not Found" }), reachedPs, { ok: { volumeId: "v" } }), true);
  assert.equal(shownByWineWmi(row({ ok: { diskIDs: {} } }), reachedPs, { code: Code.Unavailable, message: "no PowerShell worker" }), true);
  assert.equal(shownByWineWmi(row({ ok: { volumeIds: [] } }), reachedPs, { ok: { volumeIds: [] } }), true);
});

test("each condition is needed: v1.1.3 reached PowerShell, ours did not refuse by its own checks, the answer is WMI's", () => {
  const wmi = row({ code: 2, message: wmiFailure });
  assert.equal(shownByWineWmi(wmi, row({ code: 2, message: "x" }), hostAnswer), false, "v1.1.3 did not reach its host");
  assert.equal(shownByWineWmi(wmi, undefined, hostAnswer), false, "no v1.1.3 row");
  assert.equal(shownByWineWmi(wmi, reachedPs, { code: Code.InvalidArgument, message: "path contains invalid characters: C:/k" }), false, "our stricter check stays visible");
  assert.equal(shownByWineWmi(wmi, reachedPs, { code: Code.PermissionDenied, message: "not allowed" }), false, "our policy refusal stays visible");
  assert.equal(shownByWineWmi(row({ code: 2, message: "not a mounted folder" }), reachedPs, hostAnswer), false, "a Win32 answer of v1.3.0");
  assert.equal(shownByWineWmi(row({ code: 2, message: "File not found." }), reachedPs, hostAnswer), false, "a Win32 answer of v1.3.0");
  assert.equal(shownByWineWmi(row({ code: 2, message: "" }), reachedPs, hostAnswer), false, "an empty message");
  assert.equal(shownByWineWmi(row({ ok: { volumeIds: ["\\\\?\\Volume{1}\\"] } }), reachedPs, hostAnswer), false, "a non-empty list");
  assert.equal(shownByWineWmi(row({ ok: {} }), reachedPs, hostAnswer), false, "an empty response has no list to be empty");
});
