// The differential between a Node.js driver's pipe client (@grpc/grpc-js + @grpc/proto-loader with
// democratic-csi's options, over the daemon's endpoint) and the in-process client: the requests
// sent to every RPC of the catalog, and how one call's outcome is recorded for comparison.
import * as path from "node:path";
// path.join of this platform: under node.exe the kubelet paths are Windows paths.
import { fromJson, ScalarType, type DescMessage, type DescService, type JsonObject } from "@bufbuild/protobuf";
import * as grpcJs from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { allEndpoints, catalog } from "../../src/api/catalog.ts";
import { toLoaderShape } from "../../src/in-process/loader-shape.ts";
import { matrixEntry } from "./rpc-matrix.ts";

export const grpc = grpcJs;

/** democratic-csi's proto-loader options. */
export const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

export const serviceOf = (group: string, version: string) => (catalog as unknown as Record<string, Record<string, DescService>>)[group][version];

/** A grpc-js client class for one group/version, from the .proto files as a driver ships them. */
export function loadGrpcClientClass(protoRoot: string, group: string, version: string) {
  const definition = protoLoader.loadSync(path.join(protoRoot, group, version, "api.proto"), { ...LOADER_OPTIONS, includeDirs: [protoRoot] });
  const pkg = grpc.loadPackageDefinition(definition) as Record<string, unknown>;
  const service = serviceOf(group, version);
  let node: unknown = pkg;
  for (const part of service.typeName.split(".")) node = (node as Record<string, unknown>)[part];
  return node as new (target: string, credentials: unknown, options?: object) => Record<string, (...args: unknown[]) => unknown> & { close(): void };
}

export interface Outcome {
  ok: boolean;
  response?: unknown;
  code?: number;
  details?: string;
  message?: string;
  metadata?: unknown;
}

/** Calls `fn(request, callback)` and records the answer (grpc-js and in-process alike). */
export function record(call: (request: unknown, cb: (err: unknown, res?: unknown) => void) => void, request: unknown): Promise<Outcome> {
  return new Promise((resolve) => {
    try {
      call(request, (err, res) => {
        if (err) {
          const e = err as { code: number; details: string; message: string; metadata: { getMap(): unknown } };
          resolve({ ok: false, code: e.code, details: e.details, message: e.message, metadata: e.metadata?.getMap?.() });
        } else resolve({ ok: true, response: res });
      });
    } catch (err) {
      resolve({ ok: false, message: `threw ${(err as Error).message}` });
    }
  });
}

/** Variants of a well-formed request that a lenient client accepts or refuses: derived from the message, so every RPC gets them. */
function variants(desc: DescMessage, base: Record<string, unknown>): [string, unknown][] {
  const out: [string, unknown][] = [
    ["as sent", base],
    ["empty object", {}],
    ["null", null],
    ["undefined", undefined],
    ["array", [base]],
    ["extra property", { ...base, not_a_field: "x" }],
  ];
  // Strings that are not valid UTF-16 (lone surrogates), on the first string field: protobufjs
  // writes a short one's surrogate as invalid UTF-8 (the daemon refuses it), a long one (40+
  // characters) as U+FFFD (the daemon goes ahead with it).
  const text = desc.fields.find((f) => f.fieldKind === "scalar" && f.scalar === ScalarType.STRING);
  if (text) {
    out.push(
      [`${text.name} lone high surrogate`, { ...base, [text.name]: "a\uD800b" }],
      [`${text.name} lone low surrogate`, { ...base, [text.name]: "\uDC00" }],
      [`${text.name} lone surrogate, 40+ characters`, { ...base, [text.name]: `${"x".repeat(45)}\uD83D` }],
    );
  }
  for (const field of desc.fields) {
    const name = field.name;
    if (field.fieldKind === "scalar") {
      if (field.scalar === ScalarType.STRING) out.push([`${name} as a number`, { ...base, [name]: 5 }], [`${name} null`, { ...base, [name]: null }]);
      else if (field.scalar === ScalarType.BOOL) out.push([`${name} as a string`, { ...base, [name]: "yes" }]);
      else out.push([`${name} as a string`, { ...base, [name]: String((base[name] as string | number | undefined) ?? "12") }], [`${name} as text`, { ...base, [name]: "abc" }], [`${name} negative`, { ...base, [name]: -1 }]);
    } else if (field.fieldKind === "enum") {
      out.push([`${name} by number`, { ...base, [name]: 1 }], [`${name} unknown name`, { ...base, [name]: "NO_SUCH" }]);
    } else if (field.fieldKind === "message") {
      out.push([`${name} as a string`, { ...base, [name]: "x" }], [`${name} null`, { ...base, [name]: null }]);
    } else if (field.fieldKind === "list") {
      out.push([`${name} not a list`, { ...base, [name]: "x" }]);
    } else if (field.fieldKind === "map") {
      out.push([`${name} not an object`, { ...base, [name]: 7 }]);
    }
  }
  return out;
}

export interface DifferentialCase {
  group: string;
  version: string;
  method: string;
  variant: string;
  request: unknown;
}

/** Every RPC of the catalog (or of `groups`), each with its variants; requests from the RPC matrix. */
export function differentialCases(kubelet: string, groups?: string[]): DifferentialCase[] {
  const cases: DifferentialCase[] = [];
  for (const { group, version } of allEndpoints()) {
    if (groups && !groups.includes(group)) continue;
    for (const m of serviceOf(group, version).methods) {
      const entry = matrixEntry(group, version, m.name, kubelet);
      const base = toLoaderShape(m.input, fromJson(m.input, entry.request as JsonObject) as unknown as Record<string, unknown>);
      for (const [variant, request] of variants(m.input, base)) cases.push({ group, version, method: m.name, variant, request });
    }
  }
  return cases;
}

/**
 * Over the transport's 4 MiB message limit (RESOURCE_EXHAUSTED with the message's length) and just
 * under it: per group, the first RPC with a string field at the newest version that has one (each
 * case moves 4 MiB through both clients: one per group keeps the differential within its budget).
 */
export function hugeCases(kubelet: string): DifferentialCase[] {
  const cases: DifferentialCase[] = [];
  const endpoints = allEndpoints().reverse(); // newest version of each group first
  for (const group of new Set(endpoints.map((e) => e.group))) {
    found: for (const { version } of endpoints.filter((e) => e.group === group)) {
      for (const m of serviceOf(group, version).methods) {
        const text = m.input.fields.find((f) => f.fieldKind === "scalar" && f.scalar === ScalarType.STRING);
        if (!text) continue;
        const base = toLoaderShape(m.input, fromJson(m.input, matrixEntry(group, version, m.name, kubelet).request as JsonObject) as unknown as Record<string, unknown>);
        cases.push(
          { group, version, method: m.name, variant: `${text.name} of 4 MiB (over the limit)`, request: { ...base, [text.name]: "h".repeat(4 * 1024 * 1024) } },
          { group, version, method: m.name, variant: `${text.name} of 4 MiB - 1 KiB (under the limit)`, request: { ...base, [text.name]: "u".repeat(4 * 1024 * 1024 - 1024) } },
        );
        break found;
      }
    }
  }
  return cases;
}
