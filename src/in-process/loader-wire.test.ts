// loaderWireBytes gives, byte for byte, what proto-loader's serializer (protobufjs on Node.js) puts
// on the wire for the same request object — for every request message of the catalog, with fields
// absent, present at their defaults, coerced, and strings short and long with lone surrogates.
import { it } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import * as protoLoader from "@grpc/proto-loader";
import { ScalarType, create } from "@bufbuild/protobuf";
import { allEndpoints, catalog } from "../api/catalog.ts";
import { loaderWireBytes, protobufjsUtf8 } from "./loader-wire.ts";
import { toLoaderShape } from "./loader-shape.ts";

const PROTO = path.join(import.meta.dirname, "../../proto");
const OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO] };

it("protobufjsUtf8 writes a short string's lone surrogate raw (3 bytes) and a long one's as U+FFFD", () => {
  assert.deepEqual([...protobufjsUtf8("a\uD800")], [0x61, 0xed, 0xa0, 0x80]);
  assert.deepEqual([...protobufjsUtf8("\uD83D\uDE00")], [0xf0, 0x9f, 0x98, 0x80]);
  assert.deepEqual([...protobufjsUtf8(`${"x".repeat(40)}\uD800`).subarray(40)], [0xef, 0xbf, 0xbd]);
});

it("matches proto-loader's serializer byte for byte for every request message of the catalog", () => {
  let compared = 0;
  for (const { group, version } of allEndpoints()) {
    const definition = protoLoader.loadSync(path.join(PROTO, group, version, "api.proto"), OPTIONS);
    const service = (catalog as unknown as Record<string, Record<string, { typeName: string; methods: { name: string; input: Parameters<typeof loaderWireBytes>[0] }[] }>>)[group][version];
    for (const m of service.methods) {
      const methodDefinition = (definition[service.typeName] as Record<string, { requestSerialize(v: unknown): Buffer }>)[m.name];
      const serialize = (request: unknown) => methodDefinition.requestSerialize(request);
      const defaults = toLoaderShape(m.input, create(m.input) as unknown as Record<string, unknown>);
      const requests: unknown[] = [{}, defaults];
      const text = m.input.fields.find((f) => f.fieldKind === "scalar" && f.scalar === ScalarType.STRING);
      if (text) requests.push({ ...defaults, [text.name]: "a\uD800b" }, { ...defaults, [text.name]: `${"y".repeat(50)}\uDC00` }, { [text.name]: 42 }, { [text.name]: "é😀" });
      for (const f of m.input.fields) {
        if (f.fieldKind === "enum") requests.push({ [f.name]: "NO_SUCH" }, { [f.name]: 1 }, { [f.name]: f.enum.values.at(-1)!.name });
        if (f.fieldKind === "scalar" && f.scalar !== ScalarType.STRING) requests.push({ [f.name]: "12" }, { [f.name]: -1 }, { [f.name]: true });
        if (f.fieldKind === "message") requests.push({ [f.name]: {} }, { [f.name]: null });
      }
      for (const request of requests) {
        assert.deepEqual(Buffer.from(loaderWireBytes(m.input, request)), serialize(request), `${group} ${version} ${m.name} ${JSON.stringify(request)}`);
        compared++;
      }
    }
  }
  assert.ok(compared > 500, `${compared} requests compared`);
});
