/**
 * libblkid called in process (koffi): the library blkid(8) and wipefs(8) are built on, driven with the
 * settings those two programs use, so the answers are theirs without a process per call (a spawn costs
 * 5–10 ms; a probe here about 1 ms).
 *
 * - {@link Blkid.probe} is `blkid -p -o export <dev>` (util-linux 2.38 `lowprobe_device`): superblock
 *   flags LABEL|UUID|TYPE|SECTYPE|USAGE|VERSION, partitions enabled with entry details, a whole disk of
 *   at most 1440 KiB first checked for a partition table alone, then `blkid_do_safeprobe`; a result with
 *   neither TYPE nor PTTYPE (only a partition's own PART_ENTRY_* values) is empty, as blkid prints nothing.
 * - {@link Blkid.signatures} is `wipefs --no-act` (`read_offsets`): superblock flags
 *   MAGIC|TYPE|USAGE|LABEL|UUID|BADCSUM, partitions with MAGIC|FORCE_GPT, `blkid_do_probe` until it
 *   reports no more, each signature hidden (`blkid_probe_hide_range`) and the chain stepped back so that
 *   every superblock and partition table at any offset is listed; one entry per offset, in the order found.
 *
 * Stricter than the programs in one way: an I/O error while probing rejects (Unavailable, naming the
 * device and libblkid's code: {@link probeReadError}) where blkid exits 2 ("nothing found") and wipefs
 * lists what it found before the error. Never empty by mistake. A safeprobe failure other than -2 is
 * told apart by listing the signatures: two or more that read are the ambivalent result ("holds
 * ambivalent signatures …", whatever code that libblkid version gives it), else the read error.
 *
 * Calls that touch the device (open, probe, close) run on koffi worker threads, each bounded by
 * `timeoutMs` (default 30 s as the programs had, under the daemon's -host-command-timeout cap;
 * DeadlineExceeded, as a hung tool was); calls that only read the probe's memory are made
 * directly. The probe is freed (its descriptor closed) before the call settles; a probe whose call
 * timed out is never freed (the hung call may still use it).
 *
 * The call's signal (util/call-scope.ts) is looked at before the probe is opened and before each
 * libblkid call that reads the device; an aborted call starts none (DeadlineExceeded/Cancelled,
 * nothing changed: a probe only reads). A call already handed to a koffi worker thread cannot be
 * interrupted: it is waited for, bounded by `timeoutMs` (in practice one read of a few KiB to
 * 1 MiB of the device, milliseconds), and the probe is freed after.
 */
import { constants as osConstants } from "node:os";
import { Code, CsiProxyError, failedPrecondition } from "../../../errors.ts";
import { loadKoffi } from "../../../util/koffi-loader.ts";
import { cappedTimeoutMs } from "../../exec/run-command.ts";
import { callSignal } from "../../../util/call-scope.ts";
import { NOTHING_CHANGED, stopIfAborted } from "../../../util/stop-if-aborted.ts";
import type { ProbeResult, Signature } from "./block-types.ts";

export interface Blkid {
  probe(devPath: string, timeoutMs?: number): Promise<ProbeResult>;
  signatures(devPath: string, timeoutMs?: number): Promise<Signature[]>;
}

/**
 * A probe that could not read the device: Unavailable (nothing was changed; a retry may succeed),
 * naming the device and libblkid's return code (a negative errno where it gives one, e.g. -5 EIO).
 */
export function probeReadError(devPath: string, rc: number): CsiProxyError {
  const name = rc < -1 ? Object.entries(osConstants.errno).find(([, n]) => n === -rc)?.[0] : undefined;
  return new CsiProxyError(Code.Unavailable, `cannot probe ${devPath}: libblkid could not read it (returned ${rc}${name ? ` ${name}` : ", an I/O error"})`);
}

/* blkid.h */
const SUBLKS_LABEL = 1 << 1;
const SUBLKS_UUID = 1 << 3;
const SUBLKS_TYPE = 1 << 5;
const SUBLKS_SECTYPE = 1 << 6;
const SUBLKS_USAGE = 1 << 7;
const SUBLKS_VERSION = 1 << 8;
const SUBLKS_MAGIC = 1 << 9;
const SUBLKS_BADCSUM = 1 << 10;
const PARTS_FORCE_GPT = 1 << 1;
const PARTS_ENTRY_DETAILS = 1 << 2;
const PARTS_MAGIC = 1 << 3;

const DEFAULT_TIMEOUT_MS = 30_000;
/** blkid(8) checks whole disks up to this size for a partition table before any filesystem. */
const SMALL_DISK_BYTES = 1024 * 1440;

type Fn = ((...args: unknown[]) => unknown) & { async: (...args: unknown[]) => void };
type Probe = unknown;

let loading: Promise<Blkid> | undefined;

/** libblkid.so.1 through koffi, loaded once; rejects when either is unavailable (callers then run the programs). */
export function loadBlkid(): Promise<Blkid> {
  loading ??= (async () => {
    const koffi = await loadKoffi();
    const lib = koffi.load("libblkid.so.1");
    const fn = (proto: string) => lib.func(proto) as unknown as Fn;
    const newProbe = fn("void *blkid_new_probe_from_filename(const char *filename)");
    const freeProbe = fn("void blkid_free_probe(void *pr)");
    const doProbe = fn("int blkid_do_probe(void *pr)");
    const doSafeProbe = fn("int blkid_do_safeprobe(void *pr)");
    const doFullProbe = fn("int blkid_do_fullprobe(void *pr)");
    const enableSuperblocks = fn("int blkid_probe_enable_superblocks(void *pr, int enable)");
    const superblocksFlags = fn("int blkid_probe_set_superblocks_flags(void *pr, int flags)");
    const enablePartitions = fn("int blkid_probe_enable_partitions(void *pr, int enable)");
    const partitionsFlags = fn("int blkid_probe_set_partitions_flags(void *pr, int flags)");
    const getSize = fn("int64_t blkid_probe_get_size(void *pr)");
    const isWholeDisk = fn("int blkid_probe_is_wholedisk(void *pr)");
    const hideRange = fn("int blkid_probe_hide_range(void *pr, uint64_t off, uint64_t len)");
    const stepBack = fn("int blkid_probe_step_back(void *pr)");
    const lookupText = fn("int blkid_probe_lookup_value(void *pr, const char *name, _Out_ const char **data, void *len)");
    const lookupLength = lib.func("blkid_probe_lookup_value", "int", ["void *", "const char *", "void *", koffi.out(koffi.pointer("size_t"))]) as unknown as Fn;

    /** A value as text, null when the probe has none. */
    const text = (pr: Probe, name: string): string | null => {
      const out: (string | null)[] = [null];
      return lookupText(pr, name, out, null) === 0 ? out[0] : null;
    };
    const length = (pr: Probe, name: string): number | null => {
      const out: (number | bigint)[] = [0];
      return lookupLength(pr, name, null, out) === 0 ? Number(out[0]) : null;
    };

    /** Runs `body` on a probe of `devPath` (opened read-only by libblkid) and frees it. */
    async function withProbe<T>(devPath: string, timeoutMs: number, body: (pr: Probe, call: <R>(f: Fn, ...args: unknown[]) => Promise<R>) => Promise<T>): Promise<T> {
      let hung = false;
      const signal = callSignal();
      const stopIfCallAborted = () => stopIfAborted(signal, { before: `probing ${devPath} with libblkid`, done: NOTHING_CHANGED });
      /** Starts one libblkid call on a koffi worker (see above: not interruptible once started). */
      const call = <R>(f: Fn, ...args: unknown[]) =>
        new Promise<R>((resolve, reject) => {
          const timer = setTimeout(() => {
            hung = true;
            reject(new CsiProxyError(Code.DeadlineExceeded, `probing ${devPath} with libblkid: no answer after ${timeoutMs} ms`));
          }, timeoutMs);
          f.async(...args, (err: unknown, result: R) => {
            clearTimeout(timer);
            if (err) reject(err);
            else resolve(result);
          });
        });
      stopIfCallAborted();
      const pr = await call<Probe>(newProbe, devPath);
      if (!pr) throw failedPrecondition(`cannot probe ${devPath}: libblkid cannot open it`);
      try {
        // Device reads of the body stop between calls; freeing the probe (below) always runs.
        return await body(pr, <R>(f: Fn, ...args: unknown[]) => (stopIfCallAborted(), call<R>(f, ...args)));
      } finally {
        // Waited for (bounded by timeoutMs), so the call answers after its descriptor is closed; never while a call hangs.
        if (!hung) await call(freeProbe, pr).catch(() => {});
      }
    }

    const ioError = (devPath: string, rc: number) => probeReadError(devPath, rc);

    /**
     * Every signature, the wipefs way (see the module doc). Also what tells a safeprobe's failure
     * apart: readable signatures that conflict are the ambivalent result, a read error is the error.
     */
    const signatures = (devPath: string, timeoutMs: number) =>
      withProbe(devPath, timeoutMs, async (pr, call) => {
        enableSuperblocks(pr, 1);
        superblocksFlags(pr, SUBLKS_MAGIC | SUBLKS_TYPE | SUBLKS_USAGE | SUBLKS_LABEL | SUBLKS_UUID | SUBLKS_BADCSUM);
        enablePartitions(pr, 1);
        partitionsFlags(pr, PARTS_MAGIC | PARTS_FORCE_GPT);
        const found: Signature[] = [];
        for (;;) {
          const rc = await call<number>(doProbe, pr);
          if (rc === 1) return found;
          if (rc !== 0) throw ioError(devPath, rc);
          const fsType = text(pr, "TYPE");
          const prefix = fsType !== null ? "SB" : "PT";
          const type = fsType ?? text(pr, "PTTYPE");
          if (type === null) continue;
          const offsetText = text(pr, `${prefix}MAGIC_OFFSET`);
          const len = length(pr, `${prefix}MAGIC`);
          if (offsetText === null || len === null) continue;
          const offset = BigInt(offsetText);
          const same = found.find((s) => s.offset === offset);
          if (same) same.type = type;
          else found.push({ type, offset });
          // Hide this signature and probe its chain again: the next one of the same kind is found too.
          hideRange(pr, offset, BigInt(len));
          stepBack(pr);
        }
      });

    return {
      probe: (devPath, timeoutMs = cappedTimeoutMs(DEFAULT_TIMEOUT_MS)) =>
        withProbe(devPath, timeoutMs, async (pr, call): Promise<ProbeResult> => {
          superblocksFlags(pr, SUBLKS_LABEL | SUBLKS_UUID | SUBLKS_TYPE | SUBLKS_SECTYPE | SUBLKS_USAGE | SUBLKS_VERSION);
          enablePartitions(pr, 1);
          let rc: number | undefined;
          if (Number(getSize(pr)) <= SMALL_DISK_BYTES && (await call<number>(isWholeDisk, pr))) {
            // A small whole disk with a partition table: the table is the answer, no filesystem probing.
            enableSuperblocks(pr, 0);
            const full = await call<number>(doFullProbe, pr);
            if (full < 0) throw ioError(devPath, full);
            if (text(pr, "PTTYPE") !== null) rc = 0;
          }
          if (rc === undefined) {
            partitionsFlags(pr, PARTS_ENTRY_DETAILS);
            enableSuperblocks(pr, 1);
            rc = await call<number>(doSafeProbe, pr);
          }
          if (rc === -2) return { kind: "ambivalent", detail: "libblkid: ambivalent result, several signatures (see wipefs -n)" };
          if (rc < 0) {
            // Not every libblkid numbers the ambivalent result -2: conflicting signatures that all read are that result, anything else the read error.
            const listed = await signatures(devPath, timeoutMs);
            if (listed.length > 1) return { kind: "ambivalent", detail: `holds ambivalent signatures ${listed.map((x) => `${x.type} at byte ${x.offset}`).join(", ")}` };
            throw ioError(devPath, rc);
          }
          const type = rc === 0 ? text(pr, "TYPE") : null;
          const ptType = rc === 0 ? text(pr, "PTTYPE") : null;
          // On a partition libblkid also reports PART_ENTRY_* (the partition's own entry): not a signature.
          if (type === null && ptType === null) return { kind: "empty" };
          return { kind: "found", type, usage: text(pr, "USAGE"), ptType };
        }),

      signatures: (devPath, timeoutMs = cappedTimeoutMs(DEFAULT_TIMEOUT_MS)) => signatures(devPath, timeoutMs),
    };
  })();
  return loading;
}
