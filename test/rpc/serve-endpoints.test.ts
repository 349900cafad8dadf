// serveEndpoints starts every endpoint concurrently: each socket is still created 0600, the process
// umask is restored afterwards, and a failing endpoint stops the others.
import { it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { serveEndpoints } from "../../src/rpc/serve-endpoints.ts";
import { Filesystem } from "../../src/gen/filesystem/v1/api_pb.ts";

const observer = { start: () => () => {} };
const endpoint = (address: string) => ({ group: "filesystem", version: "v1", address, service: Filesystem, handlers: {} as never });

it("creates every socket 0600 concurrently and restores the umask", { skip: process.platform === "win32" }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-serve-"));
  const umask = process.umask();
  const addresses = Array.from({ length: 23 }, (_, i) => path.join(dir, "s", `e${i}.sock`));
  const serving = await serveEndpoints(addresses.map(endpoint), { observer });
  try {
    assert.equal(process.umask(), umask);
    assert.deepEqual(serving.addresses, addresses);
    for (const a of addresses) assert.equal(statSync(a).mode & 0o777, 0o600, a);
  } finally {
    await serving.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

it("stops the endpoints that started when one cannot listen", { skip: process.platform === "win32" }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-serve-"));
  const umask = process.umask();
  writeFileSync(path.join(dir, "taken.sock"), "not a socket");
  const good = [path.join(dir, "a.sock"), path.join(dir, "b.sock")];
  await assert.rejects(serveEndpoints([...good, path.join(dir, "taken.sock")].map(endpoint), { observer }), /not a socket/);
  assert.equal(process.umask(), umask);
  for (const a of good) assert.equal(existsSync(a), false, a);
  rmSync(dir, { recursive: true, force: true });
});
