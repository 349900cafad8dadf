/**
 * The few libc calls Node lacks (mount(2), umount2(2), syncfs(2)), through koffi's asynchronous calls: each runs
 * on a koffi worker thread, so a slow mount (journal replay) or a hanging unmount never blocks the
 * event loop. koffi reports the worker's errno to the callback (`koffi.errno()` read there).
 *
 * Contract: resolves on success; rejects with an Error whose `code` is the errno name ("EBUSY", …)
 * and `errno` its number, or after `timeoutMs` with code "ETIMEDOUT" (the call itself cannot be
 * cancelled and may still finish later).
 */
import { loadKoffi, type Koffi } from "../../../util/koffi-loader.ts";

/** umount2 flag: do not follow a symbolic link as the final component. */
export const UMOUNT_NOFOLLOW = 8;

export interface Libc {
  mount(source: string, target: string, fsType: string, flags: number, data: string | null, timeoutMs?: number): Promise<void>;
  umount2(target: string, flags: number, timeoutMs?: number): Promise<void>;
  /**
   * syncfs(2) of the filesystem holding the open descriptor `fd` (the caller keeps it open until this
   * settles): rejects with EIO, ENOSPC… when a write-back error was recorded on that filesystem since
   * the descriptor's open (the kernel's errseq, Linux ≥ 5.8) or the filesystem's own sync fails.
   */
  syncfs(fd: number, timeoutMs?: number): Promise<void>;
}

type AsyncFn = { async: (...args: unknown[]) => void };

const DEFAULT_TIMEOUT_MS = 120_000;

function errnoError(koffi: Koffi, call: string, errno: number): NodeJS.ErrnoException {
  const name = Object.entries(koffi.os.errno).find(([, n]) => n === errno)?.[0] ?? `E${errno}`;
  return Object.assign(new Error(`${call}: ${name}`), { code: name, errno, syscall: call });
}

function callAsync(koffi: Koffi, name: string, fn: AsyncFn, args: unknown[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(Object.assign(new Error(`${name}: no answer after ${timeoutMs} ms`), { code: "ETIMEDOUT" })), timeoutMs);
    fn.async(...args, (err: unknown, result: number) => {
      const errno = koffi.errno();
      clearTimeout(timer);
      if (err) reject(err);
      else if (result !== 0) reject(errnoError(koffi, name, errno));
      else resolve();
    });
  });
}

let loading: Promise<Libc> | undefined;

/** libc.so.6, loaded once. */
export function loadLibc(): Promise<Libc> {
  loading ??= (async () => {
    const koffi = await loadKoffi();
    const lib = koffi.load("libc.so.6");
    const mount = lib.func("int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const char *data)") as unknown as AsyncFn;
    const umount2 = lib.func("int umount2(const char *target, int flags)") as unknown as AsyncFn;
    const syncfs = lib.func("int syncfs(int fd)") as unknown as AsyncFn;
    return {
      mount: (source, target, fsType, flags, data, timeoutMs = DEFAULT_TIMEOUT_MS) =>
        callAsync(koffi, "mount", mount, [source, target, fsType, flags, data], timeoutMs),
      umount2: (target, flags, timeoutMs = DEFAULT_TIMEOUT_MS) => callAsync(koffi, "umount2", umount2, [target, flags], timeoutMs),
      syncfs: (fd, timeoutMs = DEFAULT_TIMEOUT_MS) => callAsync(koffi, "syncfs", syncfs, [fd], timeoutMs),
    };
  })();
  return loading;
}

/**
 * _exit(2): ends the process now, without exit handlers. For a stop with host operations still
 * blocked in the kernel (a dead mount): a normal exit joins libuv's pool threads, which wait there
 * for as long as the mount does not answer.
 */
export async function exitWithoutHandlers(code: number): Promise<never> {
  const koffi = await loadKoffi();
  const exit = koffi.load("libc.so.6").func("void _exit(int status)") as unknown as (status: number) => void;
  exit(code);
  throw new Error("_exit returned");
}
