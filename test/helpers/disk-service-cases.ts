/**
 * What the disk service's tests share between the Windows-shaped fake host
 * (src/groups/disk/disk-service.test.ts) and the Linux block tools (src/host/linux/disk.test.ts):
 * the PartitionDisk case table and its runner, and the list of every disk RPC.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { DiskService } from "../../src/groups/disk/types.ts";
import { rejectsWithCode } from "./assert-coded.ts";

/** A PartitionDisk case on a fake world `W` whose disks are named by `D`. */
export interface PartitionDiskCase<W, D> {
  name: string;
  /** The disk to partition (default: the setup's data disk). */
  disk?: D;
  tweak?: (w: W) => void;
  /** The refusal expected (with `message`); without it the call succeeds. */
  code?: number;
  message?: RegExp;
  /** The mutating host calls expected, in order. */
  calls: string[];
  /** Checked after the call. */
  after?: (w: W) => void;
}

/**
 * One test per case, named by it: on a fresh `setup(tweak)`, PartitionDisk of
 * `diskNumber(setup, case.disk)` fails with the case's code and message, or succeeds; then the
 * host calls and `after` are checked.
 */
export function testPartitionDiskCases<W extends { calls: string[] }, D, S extends { world: W; disk: DiskService }>(
  cases: PartitionDiskCase<W, D>[],
  setup: (tweak?: (w: W) => void) => S,
  diskNumber: (s: S, disk: D | undefined) => number,
): void {
  for (const c of cases) {
    test(c.name, async () => {
      const s = setup(c.tweak);
      const p = s.disk.partitionDisk({ diskNumber: diskNumber(s, c.disk) });
      if (c.code !== undefined) await rejectsWithCode(p, c.code, c.message);
      else await p;
      assert.deepEqual(s.world.calls, c.calls);
      c.after?.(s.world);
    });
  }
}

/** Every disk RPC by its name, each called on disk `diskNumber` (SetDiskState with `isOnline`). */
export const everyDiskRpc = (diskNumber: number, isOnline: boolean): [string, (d: DiskService) => Promise<unknown>][] => [
  ["ListDiskLocations", (d) => d.listDiskLocations()],
  ["PartitionDisk", (d) => d.partitionDisk({ diskNumber })],
  ["Rescan", (d) => d.rescan()],
  ["ListDiskIDs", (d) => d.listDiskIds()],
  ["GetDiskStats", (d) => d.getDiskStats({ diskNumber })],
  ["SetDiskState", (d) => d.setDiskState({ diskNumber, isOnline })],
  ["GetDiskState", (d) => d.getDiskState({ diskNumber })],
  ["GetDiskNumberByName", (d) => d.getDiskNumberByName({ diskName: "x" })],
];
