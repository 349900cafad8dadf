import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMethod, type DescService } from "@bufbuild/protobuf";
import type { CallContext, ServiceHandlers } from "../api/handlers.ts";
import { CsiProxyError, Code } from "../errors.ts";

/** Observes every call of a served method: logging and metrics hook in here. */
export interface CallObserver {
  /** Called once per call when it starts; the returned function is called with the final status code. */
  start(method: DescMethod, request: unknown): (code: number, error?: CsiProxyError) => void;
}

/** Longest status message sent: a trailer beyond the client's header-list limit kills the whole connection. */
const MAX_STATUS_MESSAGE = 4096;

function statusMessage(message: string): string {
  return message.length <= MAX_STATUS_MESSAGE ? message : `${message.slice(0, MAX_STATUS_MESSAGE)}… (truncated)`;
}

/**
 * Turns a protobuf-es service plus its handlers into a grpc-js service definition and
 * implementation. This is the single boundary where thrown errors become gRPC statuses:
 * a CsiProxyError keeps its code, anything else becomes Internal (and is logged by the observer).
 */
export function toGrpcService<S extends DescService>(
  service: S,
  handlers: ServiceHandlers<S>,
  observer: CallObserver,
): { definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation } {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const method of service.methods) {
    const handler = (handlers as Record<string, (req: unknown, ctx: CallContext) => Promise<object>>)[method.localName];
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (message: any) => Buffer.from(toBinary(method.input, message)),
      requestDeserialize: (bytes: Buffer) => fromBinary(method.input, bytes),
      responseSerialize: (message: any) => Buffer.from(toBinary(method.output, message)),
      responseDeserialize: (bytes: Buffer) => fromBinary(method.output, bytes),
      originalName: method.name,
    };
    implementation[method.localName] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const done = observer.start(method, call.request);
      const controller = new AbortController();
      let answered = false;
      // grpc-js also reports "cancelled" when a client resets a stream it has already had its answer
      // on (C-core does, after every call): only a cancellation before the answer aborts the handler.
      call.on("cancelled", () => {
        if (!answered) controller.abort(new CsiProxyError(Code.Cancelled, "call cancelled by the client"));
      });
      // Adapters may throw synchronously (e.g. a legacy id that does not parse): same path as a rejection.
      new Promise<object>((resolve) => resolve(handler(call.request, { signal: controller.signal }))).then(
        (response) => {
          let message;
          try {
            message = create(method.output, response as never);
          } catch (err) {
            return fail(CsiProxyError.from(err));
          }
          answered = true;
          done(Code.OK);
          callback(null, message);
        },
        (err: unknown) => fail(CsiProxyError.from(err)),
      );
      function fail(error: CsiProxyError) {
        answered = true;
        done(error.code, error);
        callback({ code: error.code as number as grpc.status, details: statusMessage(error.message) });
      }
    };
  }
  return { definition: definition as grpc.ServiceDefinition, implementation };
}
