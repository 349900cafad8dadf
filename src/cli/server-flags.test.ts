import assert from "node:assert/strict";
import { it } from "node:test";
import { parseGoFlags } from "./go-flags.ts";
import { ignoredKlogFlags, serverFlags } from "./server-flags.ts";

it("the daemon's flags keep upstream's names and defaults per platform, and parse Go-style", () => {
  const linux = serverFlags("linux", "/run/csi-proxy");
  const win = serverFlags("win32", "unused");
  const names = linux.map((f) => f.name);
  for (const n of ["kubelet-path", "working-dir", "windows-service", "require-privacy", "v", "log_file", "logtostderr", "alsologtostderr", "metrics-bind-address"]) {
    assert.ok(names.includes(n), n);
  }
  assert.equal(new Set(names).size, names.length, "no flag twice");
  assert.equal(linux.find((f) => f.name === "kubelet-path")?.default, "/var/lib/kubelet");
  assert.equal(win.find((f) => f.name === "kubelet-path")?.default, "C:\\var\\lib\\kubelet");
  assert.equal(linux.find((f) => f.name === "socket-dir")?.default, "/run/csi-proxy");
  const parsed = parseGoFlags(["-kubelet-path=/k", "--working-dir", "/a", "-working-dir=/b", "-require-privacy=false", "-v", "2", "-vmodule=x=2"], linux);
  assert.equal(parsed.values["kubelet-path"], "/k");
  assert.deepEqual(parsed.values["working-dir"], ["/a", "/b"]);
  assert.equal(parsed.values["require-privacy"], false);
  assert.equal(parsed.values.v, 2);
  assert.equal(parsed.values["default-fs-type"], "ext4");
});

it("klog flags upstream accepts are among the daemon's flags and say they have no effect", () => {
  const flags = serverFlags("linux", "/x");
  for (const f of ignoredKlogFlags) {
    assert.ok(flags.includes(f), f.name);
    assert.match(f.usage, /no effect/);
  }
  assert.equal(parseGoFlags(["-vmodule=x=2", "-skip_headers"], flags).set.size, 2);
});
