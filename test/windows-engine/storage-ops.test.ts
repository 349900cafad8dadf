/**
 * The storage worker script's ops on pwsh (byte-identical, real PowerShellPool): 0, 1 and 2
 * instances, hostile strings as data (request and world alike, ISO-date-looking ones included),
 * UInt64 extremes, the de-DE and tr-TR cultures (ICU present: the worker reports the culture it
 * runs in), the Format's typed arguments (Force=false), and a worker's crash and restart with real
 * start-up times (printed). A call's timeout killing its worker is the fake-worker pool tests'
 * (src/host/windows/powershell/powershell-pool.test.ts).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createEngine, engineSkipReason, STORAGE, type WorldInstance } from "./engine.ts";
import { hostileStrings } from "../helpers/hostile-strings.ts";
import { Code } from "../../src/errors.ts";
import { rejectsWithCode } from "../helpers/assert-coded.ts";
import { list } from "../../src/host/windows/powershell/cim-output.ts";

const skip = engineSkipReason();
const U64_MAX = "18446744073709551615";

const disk = (n: number, extra: Record<string, unknown> = {}): WorldInstance => ({
  id: `d${n}`, ns: STORAGE, class: "MSFT_Disk",
  props: { Number: n, Location: `PCI Slot ${n}`, Path: `\\\\?\\scsi#disk#${n}`, SerialNumber: `SN${n}`, Size: "1073741824", IsOffline: false, PartitionStyle: 2, ...extra },
});
const partition = (d: number, n: number, extra: Record<string, unknown> = {}): WorldInstance => ({
  id: `p${d}.${n}`, ns: STORAGE, class: "MSFT_Partition",
  props: { DiskNumber: d, PartitionNumber: n, GptType: "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}", MbrType: null, Size: "1048576", Offset: String(n * 1048576), DriveLetter: 0, AccessPaths: [], ...extra },
});
const volume = (id: string, extra: Record<string, unknown> = {}): WorldInstance => ({
  id, ns: STORAGE, class: "MSFT_Volume", props: { UniqueId: id, FileSystemType: 14, FileSystem: "NTFS", Size: "1048576", SizeRemaining: "0", ...extra },
});

for (const culture of ["de-DE", "tr-TR"]) {
  describe(`storage worker ops on pwsh, culture ${culture}`, { skip }, () => {
    const engine = createEngine();
    const locale = `${culture.replace("-", "_")}.UTF-8`;
    const pool = engine.pool({ env: { LANG: locale, LC_ALL: locale } });

    it("the worker runs in that culture (ICU present) and reports its engine", async () => {
      const t0 = Date.now();
      const pong = await pool.call<{ culture: string; psVersion: string }>("ping");
      console.log(`${culture}: first call (worker start included) ${Date.now() - t0} ms`);
      assert.equal(pong.culture, culture);
      assert.equal(pong.psVersion, "7.6.9");
    });

    it("disk.list, disk.partitions, volume.listOnDisk with 0, 1 and 2 instances; UInt64 extremes", async () => {
      for (const n of [0, 1, 2]) {
        const disks = Array.from({ length: n }, (_, i) => disk(i, { Size: i === 0 ? U64_MAX : "0" }));
        const parts = Array.from({ length: n }, (_, i) => partition(7, i + 1, { Size: i === 0 ? U64_MAX : "1", Offset: i === 0 ? "0" : U64_MAX }));
        const vols = Array.from({ length: n }, (_, i) => volume(`\\\\?\\Volume{${i}}\\`));
        engine.setWorld({ instances: [...disks, ...parts, ...vols], links: parts.map((p, i) => [p.id, vols[i].id]) });
        // an op's list comes back null for none and as the element for one (PowerShell unrolls it): the hosts read it with list()
        const listed = list("disk.list", await pool.call("disk.list")) as { number: number; size: string }[];
        assert.equal(listed.length, n);
        if (n > 0) assert.equal(listed[0].size, U64_MAX);
        const ps = list("disk.partitions", await pool.call("disk.partitions", { diskNumber: 7 })) as { size: string; offset: string }[];
        assert.equal(ps.length, n);
        if (n > 1) assert.deepEqual([ps[0].size, ps[1].offset], [U64_MAX, U64_MAX]);
        const ids = list("volume.listOnDisk", await pool.call("volume.listOnDisk", { diskNumber: 7, partitionNumber: 0 }));
        assert.deepEqual(ids, vols.map((v) => v.props.UniqueId));
      }
    });

    it("hostile strings and ISO dates are data: unknown volume ids are NotFound, world strings come back unchanged", async () => {
      const strange = [...hostileStrings.filter((s) => s.length < 5000 && !s.includes("\0")), "2026-11-29T04:00:00Z", "İıIi"];
      engine.setWorld({ instances: strange.map((s, i) => disk(i, { Location: s, SerialNumber: s })) });
      const listed = await pool.call<{ location: string; serialNumber: string }[]>("disk.list");
      assert.deepEqual(listed.map((d) => d.location), strange);
      for (const s of strange) await rejectsWithCode(pool.call("volume.get", { volumeId: s }), Code.NotFound);
      // the worker is still the same one: no string made it misbehave
      assert.equal(pool.started, 1);
    });

    it("volume.format calls MSFT_Volume.Format with typed arguments and Force=false", async () => {
      const id = "\\\\?\\Volume{f}\\";
      engine.setWorld({ instances: [disk(1), partition(1, 1), volume(id, { FileSystemType: 0, FileSystem: "" })], links: [["p1.1", id], ["d1", "p1.1"]] });
      engine.resetCalls();
      await pool.call("volume.format", { volumeId: id, expect: { fileSystemType: "0", accessPaths: "", diskNumber: "1", partitionNumber: "1", offset: "1048576", size: "1048576", isOffline: "False" } });
      const format = engine.calls().find((c) => c.method === "Format") as { arguments: Record<string, { type: string; value: string }>; violation: string | null };
      assert.equal(format.violation, null);
      assert.deepEqual(format.arguments.Force, { type: "Boolean", value: "False" });
      assert.deepEqual(format.arguments.FileSystem, { type: "String", value: "NTFS" });
    });
  });
}

describe("a worker's crash and restart on pwsh", { skip }, () => {
  const engine = createEngine();
  engine.setWorld({ instances: [disk(0)], results: { "MSFT_Disk.Refresh": { __sleepMs: 20_000 } } });
  const pool = engine.pool();
  /** Starts a disk.refresh the stand-in holds for 20 s; resolves with the call and the worker's pid once it runs. */
  const slowRefresh = async (timeoutMs: number) => {
    engine.resetCalls();
    const call = pool.call("disk.refresh", { diskNumber: 0 }, { timeoutMs }).catch((e: Error & { code?: number }) => e);
    let record: { pid?: number } | undefined;
    const t0 = Date.now();
    while (!(record = engine.calls().find((c) => c.method === "Refresh"))) {
      assert.ok(Date.now() - t0 < 60_000, "the stand-in's Refresh never started");
      await new Promise((r) => setTimeout(r, 20));
    }
    return { call, pid: Number(record.pid) };
  };

  it("a worker that dies mid-call fails that call Unavailable; the next call starts a fresh one", async () => {
    await pool.call("ping");
    const { call, pid } = await slowRefresh(30_000);
    process.kill(pid, "SIGKILL");
    const err = (await call) as Error & { code?: number };
    assert.equal(err.code, Code.Unavailable, err.message);
    assert.match(err.message, /PowerShell worker exited/);
    const t0 = Date.now();
    assert.equal((await pool.call<{ pong: boolean }>("ping")).pong, true);
    console.log(`restart after a crash: ${Date.now() - t0} ms to the first answer`);
    assert.equal(pool.started, 2);
  });
});
