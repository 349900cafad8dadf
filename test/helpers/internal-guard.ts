// "Internal only for our own bugs": every test that runs the daemon fails when the daemon answered
// any call with Internal or Unknown. The daemon logs each such answer as an error line
// (`/<service>/<Method> code=Internal duration=…`, src/daemon.ts) whatever the verbosity; the
// daemon helpers scan their stderr with assertNoInternalAnswers when they stop. In-process servers
// (serveEndpoints) get the same check through guardedObserver.
import type { CallObserver } from "../../src/rpc/grpc-service.ts";

const ANSWER = /\] (\/[\w.]+\/\w+) code=(Internal|Unknown) duration=[^\n]*/g;

/** The daemon's Internal/Unknown answers found in its log, one line each. */
export function internalAnswers(log: string): string[] {
  return [...log.matchAll(ANSWER)].map((m) => m[0].slice(2));
}

/** Throws, listing them, when the daemon log shows any Internal or Unknown answer. */
export function assertNoInternalAnswers(log: string, who = "daemon"): void {
  const found = internalAnswers(log);
  if (found.length) {
    throw new Error(`${who} answered ${found.length} call(s) with Internal/Unknown (reserved for csi-proxy's own bugs; give the failure a fitting code):\n${found.join("\n")}`);
  }
}

/** An observer for in-process servers that records Internal/Unknown answers; check() throws when there were any. */
export function guardedObserver(inner?: CallObserver): CallObserver & { check(): void } {
  const seen: string[] = [];
  return {
    start(method, request) {
      const done = inner?.start(method, request);
      return (code, error) => {
        if (code === 13 || code === 2) seen.push(`/${method.parent.typeName}/${method.name} code=${code === 13 ? "Internal" : "Unknown"} error=${error?.message ?? ""}`);
        done?.(code, error);
      };
    },
    check() {
      if (seen.length) throw new Error(`in-process server answered ${seen.length} call(s) with Internal/Unknown:\n${seen.join("\n")}`);
    },
  };
}
