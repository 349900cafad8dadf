// Checks the wire contract twice against test/contract/wire-contract.json (upstream's services,
// methods, request/response types, message fields — number, name, type, label, JSON name — and enum
// values; provenance in test/contract/README.md): once against the generated code the server serves
// (src/gen, through the catalog), once against proto/ itself, compiled by buf into descriptors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { createFileRegistry, fromBinary, ScalarType, type DescField, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { catalog, allEndpoints } from "../../src/api/catalog.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

type Field = [number, string, string, string, string];
interface ContractEndpoint {
  group: string;
  version: string;
  package: string;
  service: string;
  rpcs: [string, string, string][];
  messages: Record<string, Field[]>;
  enums: Record<string, [string, number][]>;
}
const contract = JSON.parse(readFileSync(path.join(root, "test/contract/wire-contract.json"), "utf8")) as { endpoints: ContractEndpoint[] };

/**
 * Messages our proto/ declares beyond upstream's, per endpoint. system/v1alpha1 `CmdletError`:
 * upstream declares it only in client/api/errors.proto (package `api`), where no RPC uses it; ours
 * is in package v1alpha1 and already in the released lock (proto-lock/released.binpb). No RPC carries
 * it, so no byte on the wire differs; removing it would break the lock. Any other extra fails.
 */
const extraMessages: Record<string, string[]> = { "system/v1alpha1": ["CmdletError"] };

/** Renders a field's type the way the table writes it. */
function typeOf(field: DescField): string {
  const scalar = (t: ScalarType) => ScalarType[t].toLowerCase();
  switch (field.fieldKind) {
    case "scalar": return scalar(field.scalar);
    case "enum": return `${field.enum.name} (enum)`;
    case "message": return `${field.message.name} (msg)`;
    case "list": return field.listKind === "scalar" ? scalar(field.scalar) : field.listKind === "enum" ? `${field.enum.name} (enum)` : `${field.message.name} (msg)`;
    case "map": {
      const value = field.mapKind === "scalar" ? scalar(field.scalar) : field.mapKind === "enum" ? field.enum.name : field.message.name;
      return `map<${scalar(field.mapKey)}, ${value}>`;
    }
  }
}

const label = (field: DescField) => (field.fieldKind === "list" ? "repeated" : field.fieldKind === "map" ? "map" : "");

/** Asserts that one service (and the file that declares it) is exactly the table's endpoint. */
function assertEndpoint(service: DescService, endpoint: ContractEndpoint): void {
  assert.equal(service.typeName, endpoint.service);
  assert.equal(service.file.proto.package, endpoint.package);
  assert.deepEqual(service.methods.map((m) => [m.name, m.input.name, m.output.name]), endpoint.rpcs);
  const file = service.file;
  const extras = extraMessages[`${endpoint.group}/${endpoint.version}`] ?? [];
  assert.deepEqual(file.messages.map((m) => m.name).sort(), [...Object.keys(endpoint.messages), ...extras].sort(), "message names");
  for (const message of file.messages) {
    if (extras.includes(message.name)) continue;
    assert.deepEqual(message.fields.map((f) => [f.number, f.name, typeOf(f), label(f), f.jsonName]), endpoint.messages[message.name], `message ${message.name}`);
  }
  assert.deepEqual(
    Object.fromEntries(file.enums.map((e) => [e.name, e.values.map((v) => [v.name, v.number])])),
    endpoint.enums,
    "enums",
  );
}

test("the contract table covers every served endpoint: 23 group/versions, 139 RPCs", () => {
  assert.deepEqual(contract.endpoints.map((e) => `${e.group}/${e.version}`).sort(), allEndpoints().map((e) => `${e.group}/${e.version}`).sort());
  assert.equal(contract.endpoints.reduce((n, e) => n + e.rpcs.length, 0), 139);
});

test("generated code (src/gen) is the wire contract", async (t) => {
  for (const endpoint of contract.endpoints) {
    await t.test(`${endpoint.group} ${endpoint.version}`, () => {
      const service = (catalog as unknown as Record<string, Record<string, DescService>>)[endpoint.group][endpoint.version];
      assertEndpoint(service, endpoint);
    });
  }
});

test("proto/ is the wire contract", async (t) => {
  const image = execFileSync(path.join(root, "node_modules/.bin/buf"), ["build", "-o", "-#format=binpb"], { cwd: root, maxBuffer: 16 << 20 });
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, image));
  const files = [...registry.files].map((f) => f.proto.name).sort();
  assert.deepEqual(files, contract.endpoints.map((e) => `${e.group}/${e.version}/api.proto`).sort(), "one proto file per endpoint, none else");
  for (const endpoint of contract.endpoints) {
    await t.test(`${endpoint.group} ${endpoint.version}`, () => {
      const file = registry.getFile(`${endpoint.group}/${endpoint.version}/api.proto`);
      assert.ok(file, `proto/${endpoint.group}/${endpoint.version}/api.proto`);
      assert.equal(file.services.length, 1, "one service per file");
      assertEndpoint(file.services[0], endpoint);
    });
  }
});
