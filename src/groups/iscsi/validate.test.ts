import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, CsiProxyError } from "../../errors.ts";
import { DEFAULT_ISCSI_PORT, MAX_CHAP_BYTES, checkChapName, checkChapSecret, checkIqn, checkPortal, samePortal } from "./validate.ts";

const invalid = (message?: RegExp) => (err: unknown) => {
  assert.ok(err instanceof CsiProxyError, String(err));
  assert.equal(err.code, Code.InvalidArgument);
  if (message) assert.match(err.message, message);
  return true;
};

describe("iSCSI input rules", () => {
  it("checkPortal: port 0 is 3260, brackets dropped from IPv6, bad addresses and ports refused", () => {
    assert.deepEqual(checkPortal({ targetAddress: "10.0.0.5", targetPort: 0 }), { targetAddress: "10.0.0.5", targetPort: DEFAULT_ISCSI_PORT });
    assert.deepEqual(checkPortal({ targetAddress: "[fe80::1]", targetPort: 3261 }), { targetAddress: "fe80::1", targetPort: 3261 });
    assert.deepEqual(checkPortal({ targetAddress: "target.example.com", targetPort: 65535 }).targetPort, 65535);
    assert.throws(() => checkPortal(undefined), invalid(/^target_portal is required$/));
    assert.throws(() => checkPortal({ targetAddress: "", targetPort: 1 }), invalid(/target_address is required/));
    assert.throws(() => checkPortal({ targetAddress: "a b", targetPort: 1 }), invalid(/"a b" is not a host name or IP address/));
    assert.throws(() => checkPortal({ targetAddress: "10.0.0.5", targetPort: 65536 }), invalid(/target_port 65536 is not a TCP port/));
    assert.throws(() => checkPortal({ targetAddress: "10.0.0.5", targetPort: -1 }), invalid(/is not a TCP port/));
  });

  it("checkIqn: iqn, eui and naa forms; nothing that could become a path", () => {
    for (const ok of ["iqn.2024-01.com.example:storage.lun1", "iqn.2001-04.com.example", "eui.0123456789ABCDEF", "naa.0123456789abcdef0123456789abcdef"]) assert.equal(checkIqn(ok), ok);
    assert.throws(() => checkIqn(""), invalid(/^iqn is required$/));
    for (const bad of ["iqn.2024-01.com.example:a/b", "iqn.2024-01.com.example:a,b", "eui.123", "naa.xyz", "iqn.24-01.x", `iqn.2024-01.com.example:${"a".repeat(220)}`]) {
      assert.throws(() => checkIqn(bad), invalid(/is not a valid iSCSI name/), bad);
    }
  });

  it("CHAP names and secrets: length, control characters, blanks; a secret is never quoted", () => {
    assert.equal(checkChapName("user", "chap_username"), "user");
    assert.throws(() => checkChapName("x".repeat(MAX_CHAP_BYTES + 1), "chap_username"), invalid(/chap_username is longer than 255 bytes/));
    assert.throws(() => checkChapName(" user", "chap_username"), invalid(/" user" contains control characters or surrounding blanks/));
    assert.equal(checkChapSecret("s3cret-value", "chap_secret"), "s3cret-value");
    assert.throws(() => checkChapSecret("top\nsecret", "chap_secret"), (err: unknown) => {
      invalid(/^chap_secret contains control characters or surrounding blanks$/)(err);
      assert.ok(!(err as Error).message.includes("top"));
      return true;
    });
  });

  it("samePortal: host names compare case-insensitively, ports exactly", () => {
    assert.ok(samePortal({ targetAddress: "Target.Example", targetPort: 3260 }, { targetAddress: "target.example", targetPort: 3260 }));
    assert.ok(!samePortal({ targetAddress: "target", targetPort: 3260 }, { targetAddress: "target", targetPort: 3261 }));
  });
});
