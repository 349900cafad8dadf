import assert from "node:assert/strict";
import { it } from "node:test";
import { fragmentError, FragmentError } from "../../compat/driver-fragments.ts";
import { Code, CsiProxyError } from "../../errors.ts";
import { forwarded } from "./forwarded.ts";

it("forwarded prefixes failures as upstream's legacy forwarders do, keeping code and situation", async () => {
  assert.equal(await forwarded("GetVolumeStats", async () => 5), 5);
  await assert.rejects(forwarded("GetVolumeStats", () => Promise.reject(new CsiProxyError(Code.NotFound, "volume x not found"))), (err: unknown) => {
    assert.ok(err instanceof CsiProxyError);
    assert.equal(err.code, Code.NotFound);
    assert.equal(err.message, "Forward to GetVolumeStats failed, err=volume x not found");
    return true;
  });
  const inner = fragmentError("volume-target-path-missing", "target path /k/t does not exist");
  await assert.rejects(forwarded("GetVolumeIDFromTargetPath", () => Promise.reject(inner)), (err: unknown) => {
    assert.ok(err instanceof FragmentError);
    assert.equal(err.situation, "volume-target-path-missing");
    assert.equal(err.code, inner.code);
    assert.ok(err.message.startsWith("Forward to GetVolumeIDFromTargetPath failed, err=target path /k/t does not exist"));
    return true;
  });
  await assert.rejects(forwarded("X", () => Promise.reject(new Error("boom"))), (err: unknown) => err instanceof CsiProxyError && err.code === Code.Internal);
});
