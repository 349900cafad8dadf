/**
 * A path lookup that cannot wait, made synchronously on the event loop: openat2(2) with
 * RESOLVE_CACHED walks the path only through the kernel's dentry cache, in RCU mode, where the
 * kernel cannot sleep. Whenever a component would need I/O, a lookup in the filesystem, a
 * revalidation (network and FUSE filesystems ask for one in RCU mode) or a lock, the call fails
 * with EAGAIN instead of waiting (openat2(2): "If any kind of revalidation or I/O is needed to
 * satisfy the lookup, openat2() fails with the error EAGAIN"). A path on a hung SMB mapping or a
 * dead device therefore answers "unknown" at once; the caller then asks the thread pool.
 *
 * RESOLVE_NO_SYMLINKS makes any symbolic link before the final component fail (ELOOP);
 * O_PATH|O_NOFOLLOW returns the final component itself, a link included (lstat semantics). The
 * O_PATH descriptor opens nothing in the filesystem (no open method runs) and is closed at once.
 *
 * Contract of the returned function, for an absolute, lexically normalised path (no `.`, `..`,
 * duplicate or trailing slash): "present" = the entry exists and no component before the final
 * one is a link; "absent" = a component is missing and none before it is a link; undefined = the
 * caches cannot tell without waiting, or a link is on the way, or anything else (the caller falls
 * back to its usual resolution). Never throws.
 */
import * as fs from "node:fs";
import { loadKoffi } from "../../../util/koffi-loader.ts";

export type CachedLookup = (path: string) => "present" | "absent" | undefined;

const SYS_OPENAT2: Partial<Record<string, number>> = { x64: 437, arm64: 437 };
const AT_FDCWD = -100;
const O_PATH = 0o10000000;
const O_NOFOLLOW = 0o400000;
const O_CLOEXEC = 0o2000000;
const RESOLVE_NO_SYMLINKS = 0x04;
const RESOLVE_CACHED = 0x20;
const ENOENT = 2;

/**
 * syscall(2) is variadic in C; it is declared here with fixed integer/pointer parameters, which are
 * passed in the same registers on x86-64 and arm64 Linux (glibc's syscall is assembly reading them).
 */
type Syscall = (nr: number, dirfd: number, path: string, how: Buffer, size: number) => number;

/**
 * Resolves with the lookup, or null where it cannot work (no koffi, not Linux x64/arm64, a kernel
 * before 5.12 without openat2 or RESOLVE_CACHED: probed once on "/").
 */
export async function openCachedLookup(): Promise<CachedLookup | null> {
  const nr = SYS_OPENAT2[process.arch];
  if (process.platform !== "linux" || nr === undefined) return null;
  try {
    const koffi = await loadKoffi();
    const syscall = koffi
      .load("libc.so.6")
      .func("long syscall(long number, int dirfd, const char *path, void *how, unsigned long size)") as unknown as Syscall;
    // struct open_how { u64 flags; u64 mode; u64 resolve; }
    const how = Buffer.alloc(24);
    how.writeBigUInt64LE(BigInt(O_PATH | O_NOFOLLOW | O_CLOEXEC), 0);
    how.writeBigUInt64LE(BigInt(RESOLVE_NO_SYMLINKS | RESOLVE_CACHED), 16);
    const lookup: CachedLookup = (path) => {
      if (path.includes("\0")) return undefined; // a C string would end there
      const fd = Number(syscall(nr, AT_FDCWD, path, how, 24));
      if (fd >= 0) {
        try {
          fs.closeSync(fd);
        } catch {
          // an O_PATH descriptor of ours: closing cannot fail in a way that changes the answer
        }
        return "present";
      }
      return koffi.errno() === ENOENT ? "absent" : undefined;
    };
    // "/" is always in the dcache: a kernel that knows the call and the flag answers "present".
    return lookup("/") === "present" ? lookup : null;
  } catch {
    return null;
  }
}
