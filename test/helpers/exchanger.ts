// A stoppable RENAME_EXCHANGE loop in its own process (Debian's python3 with ctypes calling glibc's
// renameat2): swaps two directory entries atomically, over and over, only between go() and stop().
// Both names always exist (no window where one is missing, unlike a rename pair).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { StoppableChild } from "./stoppable-child.ts";

export const PYTHON3 = "/usr/bin/python3";

const LOOP = `
import ctypes, sys
libc = ctypes.CDLL("libc.so.6", use_errno=True)
f = libc.renameat2
f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
a, b = sys.argv[1].encode(), sys.argv[2].encode()
sys.stdout.write("ready\\n"); sys.stdout.flush()
while True:
    f(-100, a, -100, b, 2)
`;

/** Why the exchanger cannot run here, or null. */
export function exchangerSkipReason(): string | null {
  if (process.platform !== "linux") return "renameat2 needs Linux";
  if (!existsSync(PYTHON3)) return `${PYTHON3} missing (Debian package python3)`;
  return null;
}

export class Exchanger extends StoppableChild {
  readonly ready: Promise<void>;

  /** Exchanges `a` and `b` (absolute paths, both existing) once started. */
  constructor(a: string, b: string) {
    super(spawn(PYTHON3, ["-c", LOOP, a, b], { stdio: ["ignore", "pipe", "inherit"] }), "exchanger");
    this.ready = new Promise((resolve, reject) => {
      this.child.stdout!.once("data", () => {
        this.stop();
        resolve();
      });
      this.child.once("exit", (code) => reject(new Error(`exchanger exited (${code})`)));
    });
  }
}
