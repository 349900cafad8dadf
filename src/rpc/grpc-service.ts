import { create, fromBinary, toBinary, type DescMethod, type DescService } from "@bufbuild/protobuf";
import type { CallContext, ServiceHandlers } from "../api/handlers.ts";
import { CsiProxyError, Code } from "../errors.ts";

/** Observes every call of a served method: logging and metrics hook in here. */
export interface CallObserver {
  /** Called once per call when it starts; the returned function is called with the final status code. */
  start(method: DescMethod, request: unknown): (code: number, error?: CsiProxyError) => void;
}

/** One served unary method, keyed by its HTTP/2 `:path` (`/<package>.<Service>/<Method>`). */
export interface UnaryMethod {
  readonly path: string;
  /**
   * Decodes the request, runs the handler, encodes the response. Resolves with the response
   * message bytes; rejects only with a CsiProxyError (the single boundary: a CsiProxyError keeps its
   * code, anything else becomes Internal). A request that does not decode is Internal, as grpc-go
   * answers, and is not observed (the handler never ran).
   */
  call(request: Uint8Array, context: CallContext): Promise<Uint8Array>;
}

/** Longest status message sent: a trailer beyond the client's header-list limit kills the whole connection. */
const MAX_STATUS_MESSAGE = 4096;

/** The status message sent for `error`, truncated to what every client accepts. */
export function statusMessage(message: string): string {
  return message.length <= MAX_STATUS_MESSAGE ? message : `${message.slice(0, MAX_STATUS_MESSAGE)}… (truncated)`;
}

/** Turns a protobuf-es service plus its handlers into its unary methods, keyed by `:path`. */
export function unaryMethods<S extends DescService>(service: S, handlers: ServiceHandlers<S>, observer: CallObserver): Map<string, UnaryMethod> {
  const methods = new Map<string, UnaryMethod>();
  for (const method of service.methods) {
    const handler = (handlers as Record<string, (req: unknown, ctx: CallContext) => Promise<object>>)[method.localName];
    const path = `/${service.typeName}/${method.name}`;
    methods.set(path, {
      path,
      async call(bytes, context) {
        let request;
        try {
          request = fromBinary(method.input, bytes);
        } catch (err) {
          throw new CsiProxyError(Code.Internal, `grpc: error unmarshalling request: ${err instanceof Error ? err.message : String(err)}`);
        }
        const done = observer.start(method, request);
        try {
          // Adapters may throw synchronously (e.g. a legacy id that does not parse): same path as a rejection.
          const response = toBinary(method.output, create(method.output, (await handler(request, context)) as never));
          done(Code.OK);
          return response;
        } catch (err) {
          const error = CsiProxyError.from(err);
          done(error.code, error);
          throw error;
        }
      },
    });
  }
  return methods;
}
