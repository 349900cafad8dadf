// loader-shape.ts against @grpc/proto-loader itself, for every request and response message of every
// RPC of the catalog (iterated), without a daemon: responses with every field set (64-bit values
// beyond 2^53, enums, maps, lists, nested messages) and empty, decoded by proto-loader's
// deserializer and by toLoaderShape; requests in lenient shapes, encoded by proto-loader's
// serializer and by fromLoaderShape (same decoded message, or the same error text).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import * as protoLoader from "@grpc/proto-loader";
import { create, fromBinary, toBinary, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { allEndpoints } from "../../src/api/catalog.ts";
import { fromLoaderShape, toLoaderShape } from "../../src/in-process/loader-shape.ts";
import { LOADER_OPTIONS, serviceOf } from "../helpers/differential.ts";
import { repoRoot } from "../helpers/daemon-process.ts";

type MethodDef = { requestSerialize(v: unknown): Buffer; responseDeserialize(b: Buffer): unknown };

function scalarSample(t: ScalarType): unknown {
  switch (t) {
    case ScalarType.STRING: return "s-é";
    case ScalarType.BOOL: return true;
    case ScalarType.INT32: case ScalarType.SINT32: case ScalarType.SFIXED32: return -5;
    case ScalarType.UINT32: case ScalarType.FIXED32: return 4000000000;
    case ScalarType.INT64: case ScalarType.SINT64: case ScalarType.SFIXED64: return -9007199254740993n;
    case ScalarType.UINT64: case ScalarType.FIXED64: return 18446744073709551615n;
    case ScalarType.DOUBLE: return 1.5;
    case ScalarType.FLOAT: return 0.25;
    default: return new Uint8Array([1, 2]);
  }
}
const mapKey = (t: ScalarType, i: number) => (t === ScalarType.STRING ? `k${i}` : String(i + 7));

function sample(desc: DescMessage, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const value = (f: DescField, kind: string): unknown =>
    kind === "message" ? sample(f.message!, depth + 1) : kind === "enum" ? f.enum!.values[f.enum!.values.length - 1].number : scalarSample(f.scalar!);
  for (const f of desc.fields) {
    if (depth > 3 && f.fieldKind === "message") continue;
    if (f.fieldKind === "list") out[f.localName] = [value(f, f.listKind), value(f, f.listKind)];
    else if (f.fieldKind === "map") out[f.localName] = { [mapKey(f.mapKey, 0)]: value(f, f.mapKind), [mapKey(f.mapKey, 1)]: value(f, f.mapKind) };
    else out[f.localName] = value(f, f.fieldKind);
  }
  return out;
}

function methodDefs() {
  const defs: { key: string; input: DescMessage; output: DescMessage; def: MethodDef }[] = [];
  for (const { group, version } of allEndpoints()) {
    const service = serviceOf(group, version);
    const pkg = protoLoader.loadSync(path.join(repoRoot, "proto", group, version, "api.proto"), { ...LOADER_OPTIONS, includeDirs: [path.join(repoRoot, "proto")] });
    const svc = pkg[service.typeName] as unknown as Record<string, MethodDef>;
    for (const m of service.methods) defs.push({ key: `${group}/${version}/${m.name}`, input: m.input, output: m.output, def: svc[m.name] });
  }
  return defs;
}

const outcome = (fn: () => unknown): unknown => {
  try {
    return { value: fn() };
  } catch (e) {
    return { error: (e as Error).message };
  }
};

test("responses: toLoaderShape equals proto-loader's decoding, full and empty, for every RPC", () => {
  let n = 0;
  for (const { key, output, def } of methodDefs()) {
    for (const msg of [sample(output), {}]) {
      const bytes = toBinary(output, create(output, msg as never));
      assert.deepStrictEqual(toLoaderShape(output, fromBinary(output, bytes) as never), def.responseDeserialize(Buffer.from(bytes)), key);
      n++;
    }
  }
  assert.ok(n >= 278, `${n} responses`);
});

test("requests: fromLoaderShape encodes what proto-loader's serializer encodes, lenient inputs included, for every RPC", () => {
  let n = 0;
  for (const { key, input, def } of methodDefs()) {
    const full = toLoaderShape(input, create(input, sample(input) as never) as never);
    const inputs: unknown[] = [full, {}, null, undefined, 5, "x", { ...full, extra: 1 }];
    for (const f of input.fields) {
      for (const v of [null, "", 5, "12", "abc", -1, true, "NO_SUCH", 1.7, {}, [], ["7"], { 1: {} }, 2 ** 60, "-9223372036854775809", { low: 1, high: 2 }]) inputs.push({ ...full, [f.name]: v });
    }
    for (const request of inputs) {
      const ours = outcome(() => fromBinary(input, toBinary(input, fromLoaderShape(input, request) as never)));
      const theirs = outcome(() => fromBinary(input, def.requestSerialize(request)));
      assert.deepStrictEqual(ours, theirs, `${key} ${JSON.stringify(request)}`);
      n++;
    }
  }
  assert.ok(n > 2000, `${n} requests`);
});
