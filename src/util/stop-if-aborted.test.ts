import { test } from "node:test";
import assert from "node:assert/strict";
import { abortError, NOTHING_CHANGED, StoppedBetweenSteps, stopIfAborted, withEarlierSteps } from "./stop-if-aborted.ts";
import { Code, CsiProxyError } from "../errors.ts";

test("stopIfAborted: nothing while the signal is live or absent; the signal's code, where and what was changed once aborted", () => {
  stopIfAborted(undefined, { before: "x", done: NOTHING_CHANGED });
  stopIfAborted(new AbortController().signal, { before: "x", done: NOTHING_CHANGED });
  const deadline = new AbortController();
  deadline.abort(new CsiProxyError(Code.DeadlineExceeded, "deadline exceeded"));
  assert.throws(() => stopIfAborted(deadline.signal, { before: "creating the ext4 filesystem on /dev/x", done: NOTHING_CHANGED }), (e: unknown) => {
    assert.ok(e instanceof StoppedBetweenSteps);
    assert.equal(e.code, Code.DeadlineExceeded);
    assert.equal(e.message, "deadline exceeded: stopped before creating the ext4 filesystem on /dev/x; nothing was changed");
    return true;
  });
  assert.throws(() => stopIfAborted(AbortSignal.abort()), { code: Code.Canceled, message: "cancelled" });
  assert.equal(abortError(AbortSignal.abort(new DOMException("t", "TimeoutError"))).code, Code.DeadlineExceeded);
});

test("withEarlierSteps: an abort of a later step also names what the earlier steps changed; other failures unchanged", () => {
  const cancelled = AbortSignal.abort();
  const stop = (done: string) => {
    try {
      stopIfAborted(cancelled, { before: "adding a partition to /dev/x", done });
    } catch (e) {
      return e;
    }
    assert.fail("not stopped");
  };
  const earlier = "/dev/x was given an empty GPT partition table";
  assert.equal((withEarlierSteps(stop(NOTHING_CHANGED), earlier) as Error).message, `cancelled: stopped before adding a partition to /dev/x; ${earlier}; nothing more was changed`);
  assert.equal((withEarlierSteps(stop("the claim was taken"), earlier) as Error).message, `cancelled: stopped before adding a partition to /dev/x; ${earlier}; then the claim was taken`);
  const killed = new CsiProxyError(Code.DeadlineExceeded, "sfdisk: deadline exceeded: stopped (SIGTERM) after 5 ms");
  const wrapped = withEarlierSteps(killed, earlier) as CsiProxyError;
  assert.equal(wrapped.code, Code.DeadlineExceeded);
  assert.equal(wrapped.message, `sfdisk: deadline exceeded: stopped (SIGTERM) after 5 ms; before that, ${earlier}`);
  const other = new CsiProxyError(Code.FailedPrecondition, "in use");
  assert.equal(withEarlierSteps(other, earlier), other);
});
