// The layer rule (layers.ts) holds on src/, and it is a rule that can fail: planted arrows up are
// caught. Also the size rule: no module of src/ (generated code aside, tests included) over 400 lines.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { it } from "node:test";
import { ALLOWED, forbiddenArrows, productArrows, repoRoot, ROOMS, roomOf } from "./layers.ts";

/** Lines a source file of src/ may have at most (src/gen aside). */
const MAX_LINES = 400;

it("every src/ import follows the layer rule", () => {
  assert.deepEqual(forbiddenArrows(productArrows()), [], "arrows the layer rule forbids (test/layout/layers.ts states what may import what)");
});

it("every product module has a room, and every room's rule names only rooms that exist", () => {
  const unplaced = productArrows().flatMap(([a, b]) => [a, b]).filter((f) => roomOf(f) === undefined);
  assert.deepEqual([...new Set(unplaced)], []);
  const rooms = new Set(ROOMS.map((r) => r.room));
  for (const [room, allowed] of Object.entries(ALLOWED)) {
    assert.ok(rooms.has(room), room);
    for (const t of allowed) assert.ok(rooms.has(t) || t.startsWith("src/"), `${room} allows unknown ${t}`);
  }
});

it("catches planted arrows up (the rule is not vacuous)", () => {
  const planted: [string, string][] = [
    ["src/groups/volume/volume-service.ts", "src/host/linux/volume.ts"], // groups ↛ host
    ["src/host/linux/volume.ts", "src/groups/volume/volume-service.ts"], // host → groups' host-api/types only
    ["src/util/keyed-mutex.ts", "src/host/mount-gate.ts"], // util ↛ host
    ["src/state/node-locks.ts", "src/host/exec/run-command.ts"], // state ↛ host
    ["src/state/node-locks.ts", "src/win32-service/scm.ts"], // state → win32 only for the lock primitive and the ACL check
    ["src/rpc/read-collector.ts", "src/boot/start-up-footprint.ts"], // rpc ↛ boot
    ["src/rpc/grpc-service.ts", "src/groups/services.ts"], // rpc ↛ groups
    ["src/host/linux/block/libblkid.ts", "src/win32/kernel32.ts"], // host/linux ↛ win32
    ["src/host/linux/kernel/libc.ts", "src/host/linux/block/block-reads.ts"], // kernel is the bottom Linux room
    ["src/host/linux/mounts/mount-index.ts", "src/host/linux/volume.ts"], // a room ↛ a group host
    ["src/host/windows/powershell/powershell-pool.ts", "src/host/windows/volume.ts"], // the PowerShell room ↛ a group host
    ["src/host/linux/disk.ts", "src/compose/linux.ts"], // hosts ↛ composition
  ];
  const caught = forbiddenArrows(planted);
  assert.equal(caught.length, planted.length, `not caught:\n${planted.filter(([a, b]) => !caught.some((c) => c.startsWith(`${a} `) && c.includes(`-> ${b} `))).join("\n")}`);
  // and arrows down pass
  assert.deepEqual(forbiddenArrows([["src/host/linux/volume.ts", "src/groups/volume/host-api.ts"], ["src/compose/linux.ts", "src/host/linux/disk.ts"], ["src/host/linux/block/block-reads.ts", "src/host/linux/kernel/mountinfo.ts"]]), []);
});

it(`no src/ file but generated code is over ${MAX_LINES} lines`, () => {
  const src = path.join(repoRoot, "src");
  const over = readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((f) => !f.includes(`${path.sep}src${path.sep}gen${path.sep}`))
    .map((f) => ({ f: path.relative(repoRoot, f), lines: readFileSync(f, "utf8").split("\n").length - (readFileSync(f, "utf8").endsWith("\n") ? 1 : 0) }))
    .filter(({ lines }) => lines > MAX_LINES)
    .map(({ f, lines }) => `${f}: ${lines} lines`);
  assert.deepEqual(over, [], `split these (one module, one purpose; ${MAX_LINES} lines at most)`);
});
