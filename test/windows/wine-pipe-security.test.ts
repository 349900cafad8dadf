/**
 * -pipe-sddl under Wine: the DACL is applied to every one of the 23 pipes and reads back
 * (GetSecurityInfo), the pipes keep serving afterwards, and a malformed SDDL stops startup.
 * What Wine cannot show (whether Windows enforces the DACL on instances libuv creates later) is
 * listed in docs/windows.md.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { allEndpoints } from "../../src/api/catalog.ts";
import { pipePath } from "../../src/api/endpoint.ts";
import { clientReport, runWine, startWine, wineSuite } from "./wine-harness.ts";

const { w, skip } = await wineSuite("sddl");
const kubelet = () => `-kubelet-path=${w.work.win}\\kubelet`;

test("-pipe-sddl sets the DACL of all 23 pipes, and they keep serving", { skip }, async () => {
  const sddl = "D:P(A;;GA;;;SY)(A;;GA;;;BA)";
  const server = startWine(w, [w.exeWin, kubelet(), `-pipe-sddl=${sddl}`, "-v=2"]);
  try {
    await server.waitFor(/Serving 23 endpoints/, 90_000);
    const r = await clientReport(w, "dacl", { koffiDir: w.koffiDirWin });
    for (const { group, version } of allEndpoints()) {
      const pipe = pipePath(group, version);
      // Wine keeps the ACEs but drops the "protected" flag (P) when reading the DACL back.
      assert.match(String(r.results[pipe]), /^D:P?\(A;;GA;;;SY\)\(A;;GA;;;BA\)$/, `${pipe}: ${JSON.stringify(r.results[pipe])}`);
      assert.ok(server.output().includes(`${pipe}: DACL D:`), `${pipe}: the applied DACL is logged at V(2)`);
    }
    assert.equal(r.stillServes, true);
    const pipes = await clientReport(w, "pipes");
    assert.ok(Object.values(pipes.results).every(Boolean), "every pipe still accepts connections");
  } finally {
    await server.kill();
  }
});

test("without -pipe-sddl the pipes keep libuv's default security (parity with upstream)", { skip }, async () => {
  const server = startWine(w, [w.exeWin, kubelet()]);
  try {
    await server.waitFor(/Serving 23 endpoints/, 90_000);
    const r = await clientReport(w, "dacl", { koffiDir: w.koffiDirWin });
    const pipe = pipePath("filesystem", "v1");
    assert.equal(typeof r.results[pipe], "string", JSON.stringify(r.results[pipe]));
    assert.notEqual(r.results[pipe], "D:P(A;;GA;;;SY)(A;;GA;;;BA)");
  } finally {
    await server.kill();
  }
});

test("a malformed -pipe-sddl stops startup with a clear error", { skip }, async () => {
  const r = await runWine(w, [w.exeWin, kubelet(), "-pipe-sddl=D:P(A;;GA;;;NOT-A-SID)"], 90_000);
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stdout, /invalid security descriptor/);
  assert.doesNotMatch(r.stdout, /Serving 23 endpoints/);
});
