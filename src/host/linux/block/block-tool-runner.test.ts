import { test } from "node:test";
import assert from "node:assert/strict";
import { tool } from "./block-tool-runner.ts";
import { Code } from "../../../errors.ts";

test("a tool that is not installed: FailedPrecondition naming what to install; one that fails: FailedPrecondition (the host refused), not Internal", async () => {
  await assert.rejects(tool("csi-proxy-no-such-tool", []), { code: Code.FailedPrecondition, message: /^csi-proxy-no-such-tool is not installed: install the csi-proxy-no-such-tool package/ });
  await assert.rejects(tool("sh", ["-c", "exit 3"]), { code: Code.FailedPrecondition, message: /exit status 3/ });
});

test("a tool that runs answers its output", async () => {
  const { stdout } = await tool("sh", ["-c", "printf ok"]);
  assert.equal(stdout, "ok");
});
