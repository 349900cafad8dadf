/**
 * A process that holds a file or block device node, for the opener tests: `node device-holder.ts
 * <read|read-write|mapped> <path> [holdMs]`. "read" / "read-write": an open descriptor (no O_EXCL);
 * "mapped": a shared read-only mapping of the first 4 KiB, the descriptor closed again (only the
 * mapping holds it). Prints `ready <pid>` once holding; exits after holdMs, or when killed.
 */
import { closeSync, openSync, constants } from "node:fs";
import { loadKoffi } from "../../src/util/koffi-loader.ts";

const [mode, file, holdMs] = process.argv.slice(2);
const fd = openSync(file, mode === "read-write" ? constants.O_RDWR : constants.O_RDONLY);
if (mode === "mapped") {
  const koffi = await loadKoffi();
  const mmap = koffi.load("libc.so.6").func("void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off)") as unknown as (...a: unknown[]) => unknown;
  const PROT_READ = 1;
  const MAP_SHARED = 1;
  const addr = mmap(null, 4096, PROT_READ, MAP_SHARED, fd, 0);
  if (addr === null || koffi.address(addr) === BigInt.asUintN(64, -1n)) throw new Error("mmap failed");
  closeSync(fd);
}
process.stdout.write(`ready ${process.pid}\n`);
if (holdMs) setTimeout(() => process.exit(0), Number(holdMs));
else setInterval(() => {}, 1 << 30);
