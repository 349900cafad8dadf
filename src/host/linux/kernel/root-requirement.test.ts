/** Block devices are managed as root only; the message names the uid it runs as. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { rootRequirement } from "./root-requirement.ts";

test("root needs nothing; any other uid is told to run as root", () => {
  assert.equal(rootRequirement(0), null);
  assert.equal(rootRequirement(1000), "csi-proxy must run as root to manage block devices (it runs as uid 1000)");
});
