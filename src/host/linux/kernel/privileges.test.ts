import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { capabilityNames, createPrivileges } from "./privileges.ts";

test("capabilities from a CapEff mask", () => {
  const caps = capabilityNames("000001fffeffffff");
  assert.equal(caps.has("CAP_SYS_ADMIN"), true);
  assert.equal(caps.has("CAP_SYS_RESOURCE"), false);
  assert.equal(capabilityNames("0").size, 0);
  assert.deepEqual([...capabilityNames("1")], ["CAP_CHOWN"]);
});

test("this process's uid and effective capabilities, as /proc/self/status shows them", async () => {
  const privileges = createPrivileges();
  assert.equal(privileges.effectiveUid(), process.geteuid!());
  const mask = /^CapEff:\s*([0-9a-f]+)/m.exec(readFileSync("/proc/self/status", "utf8"))![1];
  assert.deepEqual([...(await privileges.effectiveCapabilities())].sort(), [...capabilityNames(mask)].sort());
});
