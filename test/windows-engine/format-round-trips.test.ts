/**
 * FormatVolume on pwsh (the storage worker script, byte-identical, real PowerShellPool, the real
 * volume service and Windows host over the CIM stand-ins): 2 worker round trips — the call's one
 * read (`volume.facts`: volume, partition, the partition's disk) and the Format — with every refusal
 * kept: on that read (an offline disk), and in the Format's own PowerShell call, which compares
 * every fact the service decided on (expected-facts.ts) with what it reads right before the CIM
 * method, so a fact changed after the read (here: between the two round trips) is refused with
 * nothing formatted.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createEngine, engineSkipReason, STORAGE, type World, type WorldInstance } from "./engine.ts";
import { createWindowsBlockServices } from "../../src/compose/windows-block-services.ts";
import type { Win32 } from "../../src/win32/win32.ts";
import { Code } from "../../src/errors.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import type { ExpectedVolumeFacts } from "../../src/host/windows/powershell/expected-facts.ts";

const skip = engineSkipReason();
const ID = "\\\\?\\Volume{0b7e4a52-0000-0000-0000-200000000000}\\";

function world(over: { disk?: Record<string, unknown>; partition?: Record<string, unknown>; volume?: Record<string, unknown> } = {}): World {
  const instances: WorldInstance[] = [
    { id: "d3", ns: STORAGE, class: "MSFT_Disk", props: { Number: 3, Location: "", Path: "\\\\?\\scsi#disk#3", SerialNumber: "SN3", Size: "10737418240", IsOffline: false, PartitionStyle: 2, ...over.disk } },
    { id: "p3", ns: STORAGE, class: "MSFT_Partition", props: { DiskNumber: 3, PartitionNumber: 2, GptType: "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}", MbrType: null, Size: "1073741824", Offset: "16777216", DriveLetter: 0, AccessPaths: [ID], ...over.partition } },
    { id: "v3", ns: STORAGE, class: "MSFT_Volume", props: { UniqueId: ID, FileSystemType: 0, FileSystem: "", Size: "1073741824", SizeRemaining: "0", ...over.volume } },
  ];
  return { instances, links: [["p3", "v3"], ["d3", "p3"]] };
}
const FACTS: ExpectedVolumeFacts = { fileSystemType: "0", accessPaths: "", diskNumber: "3", partitionNumber: "2", offset: "16777216", size: "1073741824", isOffline: "False" };

describe("FormatVolume on pwsh: 2 worker round trips, every refusal kept", { skip }, () => {
  const engine = createEngine();
  const pool = engine.pool();
  const { volume } = createWindowsBlockServices({ win32: {} as Win32, pool });
  /** The ops the hosts send, in order; `between` runs after an op answered, before the next is sent. */
  const sent: string[] = [];
  let between: ((op: string) => void) | undefined;
  const call = pool.call.bind(pool);
  pool.call = ((op: string, ...rest: Parameters<typeof pool.call> extends [string, ...infer R] ? R : never) => {
    sent.push(op);
    return call(op, ...rest).finally(() => between?.(op));
  }) as typeof pool.call;
  const formats = () => engine.calls().filter((c) => c.method === "Format");
  const reset = (w: World) => {
    engine.setWorld(w);
    engine.resetCalls();
    sent.length = 0;
    between = undefined;
  };

  it("an empty volume is formatted in 2 worker round trips: the call's one read, then the Format carrying its facts", async () => {
    reset(world());
    await volume.formatVolume({ volumeId: ID });
    assert.deepEqual(sent, ["volume.facts", "volume.format"]);
    assert.equal(formats().length, 1);
  });

  it("refused on the one read: a drive letter, an access path, foreign data, an offline disk (1 round trip, nothing formatted)", async () => {
    const cases: [World, RegExp][] = [
      [world({ partition: { DriveLetter: 69, AccessPaths: ["E:\\", ID] } }), /in use at E:\\/],
      [world({ partition: { AccessPaths: ["C:\\mnt\\x\\", ID] } }), /in use at C:\\mnt\\x\\/],
      [world({ volume: { FileSystemType: 15, FileSystem: "ReFS" } }), /already holds ReFS/],
      [world({ disk: { IsOffline: true } }), /offline/],
    ];
    for (const [w, message] of cases) {
      reset(w);
      await rejectsWithCode(volume.formatVolume({ volumeId: ID }), Code.FailedPrecondition, message);
      assert.deepEqual(sent, ["volume.facts"], String(message));
      assert.equal(formats().length, 0);
    }
  });

  it("a fact changed between the read and the Format is refused in the Format's own PowerShell call, nothing formatted", async () => {
    const changes: [World, RegExp][] = [
      [world({ partition: { DriveLetter: 69, AccessPaths: ["E:\\", ID] } }), /accessPaths  -> E:\\/],
      [world({ volume: { FileSystemType: 14, FileSystem: "NTFS" } }), /fileSystemType 0 -> 14/],
      [world({ disk: { IsOffline: true } }), /isOffline False -> True/],
      [world({ partition: { Offset: "33554432" } }), /offset 16777216 -> 33554432/],
    ];
    for (const [after, message] of changes) {
      reset(world());
      between = (op) => op === "volume.facts" && engine.setWorld(after);
      await rejectsWithCode(volume.formatVolume({ volumeId: ID }), Code.FailedPrecondition, new RegExp(`refusing to format volume .*: it changed since it was looked up \\(.*${message.source}`));
      assert.deepEqual(sent, ["volume.facts", "volume.format"]);
      assert.equal(formats().length, 0, "nothing formatted");
    }
  });

  it("the Format's call compares every fact the service decides on: each one differing is refused", async () => {
    reset(world());
    for (const key of Object.keys(FACTS) as (keyof ExpectedVolumeFacts)[]) {
      const expect = { ...FACTS, [key]: `${FACTS[key]}x` };
      await rejectsWithCode(pool.call("volume.format", { volumeId: ID, expect }), Code.FailedPrecondition, new RegExp(`changed since it was looked up \\(${key} `));
    }
    assert.equal(formats().length, 0);
    await pool.call("volume.format", { volumeId: ID, expect: FACTS });
    assert.equal(formats().length, 1);
  });
});
