import type { DescMessage, DescService, MessageInitShape, MessageShape } from "@bufbuild/protobuf";

/** What every RPC handler receives besides its request. */
export interface CallContext {
  /** Aborted when the client cancels or the deadline passes. */
  signal: AbortSignal;
}

type Unary<I extends DescMessage, O extends DescMessage> = (
  request: MessageShape<I>,
  context: CallContext,
) => Promise<MessageInitShape<O>>;

/**
 * The implementation of one versioned service: one async function per RPC, keyed by the generated
 * method's localName (`listDiskLocations`), taking the decoded versioned request and returning the
 * versioned response (a plain object is enough).
 */
export type ServiceHandlers<S extends DescService> = {
  [K in keyof S["method"]]: S["method"][K] extends { input: infer I extends DescMessage; output: infer O extends DescMessage }
    ? Unary<I, O>
    : never;
};
