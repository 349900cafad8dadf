/**
 * The `io` calls of Win32 (src/win32/win32.ts) over a fake koffi whose asynchronous calls the
 * test completes by hand, the way koffi does: the worker thread's last error is visible to
 * GetLastError only while the completion callback runs. So: the last error is read there (not
 * after an await), at most maxIoCalls run at once, a call finding every slot held fails
 * Unavailable after the queue timeout, and a released slot goes to the next waiting call.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Win32 } from "../../src/win32/win32.ts";
import { Code } from "../../src/errors.ts";

interface Pending {
  name: string;
  args: unknown[];
  complete(result: unknown, lastError: number): void;
}

function fakeKoffi() {
  const pending: Pending[] = [];
  let lastError = 0;
  const syncCalls: string[] = [];
  const lib = {
    func(proto: string) {
      const name = /(\w+)\s*\(/.exec(proto)![1];
      const fn = () => {
        syncCalls.push(name);
        if (name === "GetLastError") return lastError;
        return 0;
      };
      return Object.assign(fn, {
        async: (...args: unknown[]) => {
          const cb = args.pop() as (err: unknown, res: unknown) => void;
          pending.push({
            name,
            args,
            complete(result, error) {
              lastError = error; // koffi restores the worker's last error for the callback only
              try {
                cb(null, result);
              } finally {
                lastError = 0;
              }
            },
          });
        },
      });
    },
  };
  const koffi = { load: () => lib, sizeof: () => 592, offsetof: () => 36, struct: () => ({}), address: () => 0n };
  return { koffi, pending, syncCalls };
}

const tick = () => new Promise((r) => setImmediate(r));

test("io calls run asynchronously and read the last error inside koffi's completion callback", async () => {
  const f = fakeKoffi();
  const w = new Win32(f.koffi as never);
  const missing = w.getFileAttributes("C:\\missing");
  await tick();
  assert.equal(f.pending.length, 1);
  assert.equal(f.pending[0].name, "GetFileAttributesW");
  assert.ok(!f.syncCalls.includes("GetFileAttributesW"), "never called on the JS thread");
  f.pending[0].complete(0xffffffff, 3 /* ERROR_PATH_NOT_FOUND */);
  assert.equal(await missing, null, "the error of the call itself, read during the callback");
  const denied = w.getFileAttributes("C:\\denied");
  await tick();
  f.pending[1].complete(0xffffffff, 5);
  await assert.rejects(denied, (e: { code: number; errno: number }) => e.code === Code.PermissionDenied && e.errno === 5);
});

test("at most maxIoCalls run at once; a held slot makes the next calls wait, then fail Unavailable; a release serves the next", async () => {
  const f = fakeKoffi();
  const w = new Win32(f.koffi as never, { maxIoCalls: 2, ioQueueTimeoutMs: 300 });
  // Taken before the third call starts its queue timer, so a slow tick under load cannot shorten the measured wait.
  const started = Date.now();
  const a = w.getVolumePathName("C:\\a");
  const b = w.getVolumePathName("C:\\b");
  const c = w.getVolumePathName("C:\\c");
  await tick();
  assert.deepEqual(f.pending.map((p) => p.args[0]), ["C:\\a", "C:\\b"], "the third waits for a slot");
  await assert.rejects(c, (e: { code: number; message: string }) => e.code === Code.Unavailable && /have not returned/.test(e.message));
  assert.ok(Date.now() - started >= 250);
  const d = w.getVolumePathName("C:\\d");
  await tick();
  assert.equal(f.pending.length, 2);
  f.pending[0].complete(1, 0);
  assert.equal(await a, "");
  await tick();
  assert.deepEqual(f.pending.map((p) => p.args[0]), ["C:\\a", "C:\\b", "C:\\d"], "the released slot went to the waiting call");
  f.pending[2].complete(1, 0);
  f.pending[1].complete(1, 0);
  assert.equal(await d, "");
  assert.equal(await b, "");
});
