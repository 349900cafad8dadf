/**
 * Stands in for koffi's Win32 handle calls of the Windows filesystem host, on the local (POSIX)
 * filesystem: attributes from the map; a "handle" records the path it was opened on and the
 * identity (dev:ino) and attributes of what was there at open time, as a real handle refers to the
 * object it opened; deleteByHandle removes the entry itself (a link never its target, a directory
 * only when empty), as FileDispositionInfo does. `opened` lists every open, `open` the handles not
 * yet closed, `maxOpen` the most open at once; `onOpen` runs before each open (tests abort or move
 * things from it), `failDelete` makes chosen deletes fail.
 */
import * as fs from "node:fs";
import { FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT } from "../../src/win32/win32-constants.ts";
import type { ReparseProbe } from "../../src/host/windows/filesystem.ts";
import type { Handle } from "../../src/win32/win32.ts";

export interface FakeWin32Handles extends ReparseProbe {
  open: Map<number, { path: string; id: string; attributes: number; rest?: string[] }>;
  /** Names returned through each listing handle, in order of opening. */
  listed: number[];
  opened: string[];
  maxOpen: number;
  deleted: number;
  onOpen?: (p: string) => void;
  /** An error to fail deleteByHandle of `p` with (nothing deleted), or undefined. */
  failDelete?: (p: string) => Error | undefined;
}

/** Names one fake readDirectoryBatch call returns at most (a 64 KiB buffer holds a few hundred). */
export const LISTING_BATCH = 300;

export function fakeWin32Handles(reparse: Map<string, number> = new Map()): FakeWin32Handles {
  let next = 1;
  const listing = new Map<number, number>();
  const attributesOf = (p: string, st: fs.Stats) =>
    (st.isDirectory() || (st.isSymbolicLink() && fs.existsSync(p) && fs.statSync(p).isDirectory()) ? FILE_ATTRIBUTE_DIRECTORY : 0) |
    (st.isSymbolicLink() || reparse.has(p) ? FILE_ATTRIBUTE_REPARSE_POINT : 0);
  const fake: FakeWin32Handles = {
    open: new Map(),
    opened: [],
    maxOpen: 0,
    deleted: 0,
    listed: [],
    getFileAttributes: (p) => (fs.existsSync(p) ? FILE_ATTRIBUTE_DIRECTORY | (reparse.has(p) ? FILE_ATTRIBUTE_REPARSE_POINT : 0) : null),
    reparseTag: (p) => reparse.get(p) ?? null,
    openEntryNoFollow: (p) => {
      fake.onOpen?.(p);
      let st: fs.Stats;
      try {
        st = fs.lstatSync(p);
      } catch {
        return null;
      }
      fake.opened.push(p);
      fake.open.set(next, { path: p, id: `${st.dev}:${st.ino}`, attributes: attributesOf(p, st) });
      fake.maxOpen = Math.max(fake.maxOpen, fake.open.size);
      return next++;
    },
    fileInfo: (h) => {
      const e = fake.open.get(Number(h));
      if (!e) throw new Error(`fileInfo on closed handle ${h}`);
      return { id: e.id, attributes: e.attributes };
    },
    openListing: (h) => {
      const e = fake.open.get(Number(h));
      if (!e) throw new Error(`openListing on closed handle ${h}`);
      fake.open.set(next, { ...e, rest: [] });
      fake.maxOpen = Math.max(fake.maxOpen, fake.open.size);
      fake.listed.push(0);
      listing.set(next, fake.listed.length - 1);
      return next++;
    },
    // like FileIdBothDirectoryInfo into a 64 KiB buffer: up to LISTING_BATCH names per call
    readDirectoryBatch: (h, restart) => {
      const e = fake.open.get(Number(h));
      if (!e?.rest) throw new Error(`readDirectoryBatch on ${h}, not an open listing handle`);
      if (restart) e.rest = fs.readdirSync(e.path);
      if (e.rest.length === 0) return null;
      const batch = e.rest.splice(0, LISTING_BATCH);
      fake.listed[listing.get(Number(h))!] += batch.length;
      return batch;
    },
    deleteByHandle: (h: Handle) => {
      const e = fake.open.get(Number(h));
      if (!e) throw new Error(`deleteByHandle on closed handle ${h}`);
      const failure = fake.failDelete?.(e.path);
      if (failure) throw failure;
      const st = fs.lstatSync(e.path);
      if (`${st.dev}:${st.ino}` !== e.id) throw new Error(`${e.path} is not the entry the handle opened`);
      if (st.isDirectory()) fs.rmdirSync(e.path);
      else fs.unlinkSync(e.path);
      fake.deleted++;
    },
    closeHandle: (h) => {
      if (!fake.open.delete(Number(h))) throw new Error(`handle ${h} closed twice`);
    },
  };
  return fake;
}
