import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { codeName } from "../errors.ts";
import { registerBlockedHostOperations } from "./blocked-host-operations.ts";
import { registerLateHostSteps } from "./late-host-steps.ts";
import { registerBlockedDeviceOperations } from "./blocked-device-operations.ts";

/** Labels of go-grpc-middleware's Prometheus server metrics, declared alphabetically as Go prints them. */
const labels = ["grpc_method", "grpc_service", "grpc_type"] as const;

/**
 * The Prometheus metrics upstream exposes (go-grpc-middleware providers/prometheus ServerMetrics):
 * same names, labels, help texts and histogram buckets, so existing dashboards keep working.
 * Series appear after the first call of a method, as upstream (not pre-initialised).
 */
export function createGrpcMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // prom-client's gauges named *_total break Prometheus naming (`promtool check metrics` flags them);
  // their per-type series (nodejs_active_handles{type} …) remain, and sum() gives the totals.
  for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) registry.removeSingleMetric(name);
  registerBlockedHostOperations(registry);
  registerLateHostSteps(registry);
  registerBlockedDeviceOperations(registry);
  const started = new Counter({
    name: "grpc_server_started_total",
    help: "Total number of RPCs started on the server.",
    labelNames: labels,
    registers: [registry],
  });
  const handled = new Counter({
    name: "grpc_server_handled_total",
    help: "Total number of RPCs completed on the server, regardless of success or failure.",
    labelNames: ["grpc_code", ...labels],
    registers: [registry],
  });
  const received = new Counter({
    name: "grpc_server_msg_received_total",
    help: "Total number of RPC stream messages received on the server.",
    labelNames: labels,
    registers: [registry],
  });
  const sent = new Counter({
    name: "grpc_server_msg_sent_total",
    help: "Total number of gRPC stream messages sent by the server.",
    labelNames: labels,
    registers: [registry],
  });
  const seconds = new Histogram({
    name: "grpc_server_handling_seconds",
    help: "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
    labelNames: labels,
    buckets: [0.001, 0.01, 0.1, 0.3, 0.6, 1, 3, 6, 9, 20, 30, 60, 90, 120],
    registers: [registry],
  });
  return {
    registry,
    /** Records the start of a unary call of `/<service>/<method>`; returns the completion recorder. */
    startCall(service: string, method: string): (code: number) => void {
      // Key order is exposition order: alphabetical, as Go prints labels.
      const l = { grpc_method: method, grpc_service: service, grpc_type: "unary" };
      const t0 = process.hrtime.bigint();
      started.inc(l);
      received.inc(l);
      return (code) => {
        if (code === 0) sent.inc(l);
        handled.inc({ grpc_code: codeName(code), ...l });
        seconds.observe(l, Number(process.hrtime.bigint() - t0) / 1e9);
      };
    },
  };
}
export type GrpcMetrics = ReturnType<typeof createGrpcMetrics>;
