import { Code, type CsiProxyError } from "../errors.ts";
import { callEnded, callStarted } from "./call-activity.ts";
import type { CallStream } from "./call-stream.ts";
import { decompressRequest, isRefusal, unframeRequest, type Refusal } from "./grpc-request.ts";
import { statusMessage } from "./grpc-service.ts";

/** Where a call's outcome goes (the connection's stream state machine). */
export interface CallOutcome {
  /** The handler's response message. */
  respond(stream: CallStream, response: Uint8Array): void;
  /** A status answer (a refused request or the handler's error); ignored by the connection when the stream was already answered. */
  refuse(stream: CallStream, status: Refusal): void;
  /** The handler (or the decompression before it) stopped; `stream.running` is false again. */
  ended(stream: CallStream): void;
}

/**
 * Runs a unary call once its request is complete: unframes the one message of `body`,
 * decompresses it when it says so, and calls the stream's method with the stream as CallContext.
 * `stream.running` is true from the decompression or handler start until `outcome.ended`. A
 * refusal before the handler is reported through `outcome.refuse` (no `ended`: nothing ran).
 */
export function runUnaryCall(stream: CallStream, body: Buffer, maxMessageBytes: number, outcome: CallOutcome): void {
  const request = unframeRequest(body, maxMessageBytes, stream.encoding);
  if (isRefusal(request)) return outcome.refuse(stream, request);
  if (!request.compressed) return callHandler(stream, request.message, outcome);
  stream.running = true;
  callStarted();
  decompressRequest(stream.encoding!, request.message, maxMessageBytes, (plain) => {
    if (stream.answered) return ended(stream, outcome);
    if (plain instanceof Uint8Array) return callHandler(stream, plain, outcome);
    outcome.refuse(stream, plain);
    ended(stream, outcome);
  });
}

function callHandler(stream: CallStream, message: Uint8Array, outcome: CallOutcome): void {
  if (!stream.running) {
    stream.running = true;
    callStarted();
  }
  stream.method!.call(message, stream).then(
    (response) => {
      outcome.respond(stream, response);
      ended(stream, outcome);
    },
    (err: CsiProxyError) => {
      // The deadline's own abort reason, rethrown as it is, answers as grpc-go words it.
      const message = err === stream.abortedWith && err.code === Code.DeadlineExceeded ? "Deadline exceeded" : err.message;
      if (!stream.answered) outcome.refuse(stream, { code: err.code, message: statusMessage(message) });
      ended(stream, outcome);
    },
  );
}

function ended(stream: CallStream, outcome: CallOutcome): void {
  stream.running = false;
  outcome.ended(stream);
  callEnded();
}
