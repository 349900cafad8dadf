/**
 * A koffi stand-in for the Win32 call modules (src/win32/files.ts, volumes.ts, security.ts,
 * tokens.ts, win32-calls.ts) on Linux: `load(dll).func(proto)` returns a function that answers from
 * `answers[name]` (`[result, lastError]`, default `[0, 0]`; the answer may fill out-parameters).
 * A synchronous call sets the last error for GetLastError until the next call; an asynchronous one
 * completes on the next turn, with its last error visible to GetLastError only while its callback
 * runs (as koffi does). `calls` lists `name` or `name async`; `freed` the pointers given to
 * LocalFree. Offsets and sizes are those of a packed layout of the real structures (koffi's own).
 */
import koffi from "koffi";

export type Answer = (...args: unknown[]) => [result: unknown, lastError?: number];

export function fakeKoffi(answers: Record<string, Answer> = {}) {
  let lastError = 0;
  const calls: string[] = [];
  const freed: unknown[] = [];
  const answer = (name: string, args: unknown[]) => (answers[name] ?? (() => [0, 0]))(...args);
  const lib = {
    func(proto: string) {
      const name = /(\w+)\s*\(/.exec(proto)![1];
      const fn = (...args: unknown[]) => {
        calls.push(name);
        if (name === "GetLastError") return lastError;
        if (name === "LocalFree") freed.push(args[0]);
        const [r, e = 0] = answer(name, args);
        lastError = e;
        return r;
      };
      return Object.assign(fn, {
        async: (...args: unknown[]) => {
          const cb = args.pop() as (err: unknown, res: unknown) => void;
          calls.push(`${name} async`);
          setImmediate(() => {
            const [r, e = 0] = answer(name, args);
            lastError = e;
            try {
              cb(null, r);
            } finally {
              lastError = 0;
            }
          });
        },
      });
    },
  };
  const types = new Map<unknown, Record<string, string>>();
  const fake = {
    load: () => lib,
    proto: () => ({}),
    struct: (name: string, fields: Record<string, unknown>) => {
      const t = { name };
      types.set(t, fields as Record<string, string>);
      return t;
    },
    // the real koffi's layout of the same structures (registered under a name of their own)
    sizeof: (t: { name: string }) => koffi.sizeof(real(t.name)),
    offsetof: (t: { name: string }, f: string) => koffi.offsetof(real(t.name), f),
    address: (b: Buffer) => koffi.address(b),
    decode: { string16: (p: unknown) => String(p) },
  };
  return { koffi: fake, calls, freed };
}

/** The real koffi type of a WIN32_STRUCTS structure (defined once per process under a prefixed name). */
const realTypes = new Map<string, unknown>();
import { WIN32_STRUCTS } from "../../src/win32/win32-structs.ts";
function real(name: string): never {
  if (realTypes.size === 0) {
    for (const [n, fields] of Object.entries(WIN32_STRUCTS)) {
      const f = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, WIN32_STRUCTS[v] ? realTypes.get(v) : v]));
      realTypes.set(n, koffi.struct(`fake_${n}`, f as never));
    }
  }
  return realTypes.get(name) as never;
}
