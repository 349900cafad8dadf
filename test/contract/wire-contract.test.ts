// Checks our generated descriptors against every table of the shared wire contract: services,
// methods, request/response types, message fields (number, name, type, label) and enum values.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ScalarType, type DescField, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { catalog, allEndpoints } from "../../src/api/catalog.ts";

const contractPath = fileURLToPath(new URL("../../../shared/spec/wire-contract.md", import.meta.url));

interface ContractSection {
  group: string;
  version: string;
  pkg: string;
  service: string;
  rpcs: [string, string, string][];
  messages: Map<string, [number, string, string, string, string][]>;
  enums: Map<string, [string, number][]>;
}

function parseContract(text: string): ContractSection[] {
  const sections: ContractSection[] = [];
  for (const chunk of text.split(/^#### /m).slice(1)) {
    const head = /^(\w+) (v\w+)\s*$/m.exec(chunk.split("\n", 1)[0]);
    if (!head) continue;
    const section: ContractSection = {
      group: head[1], version: head[2],
      pkg: /package `(\w+)`/.exec(chunk)![1],
      service: /Service `(\w+\.\w+)`/.exec(chunk)![1],
      rpcs: [], messages: new Map(), enums: new Map(),
    };
    let message = "", enumName = "";
    for (const line of chunk.split("\n")) {
      if (!line.startsWith("|") || /^\|(---|\s*(RPC|Message|Enum)\s*\|)/.test(line)) continue;
      const cells = line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
      if (cells.length === 4 && cells[3].startsWith("`/")) section.rpcs.push([cells[0], cells[1], cells[2]]);
      else if (cells.length === 8) {
        if (cells[0] !== "〃") section.messages.set((message = cells[0]), []);
        if (cells[1] !== "–") section.messages.get(message)!.push([Number(cells[1]), cells[2], cells[3], cells[4], cells[7]]);
      } else if (cells.length === 3) {
        if (cells[0] !== "〃") section.enums.set((enumName = cells[0]), []);
        section.enums.get(enumName)!.push([cells[1], Number(cells[2])]);
      }
    }
    sections.push(section);
  }
  return sections;
}

/** Renders a field's type the way the contract writes it. */
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

test("wire contract", { skip: !existsSync(contractPath) && `no contract at ${contractPath}` }, async (t) => {
  const sections = parseContract(readFileSync(contractPath, "utf8"));
  assert.equal(sections.length, 23, "contract sections");
  assert.deepEqual(sections.map((s) => `${s.group}/${s.version}`).sort(), allEndpoints().map((e) => `${e.group}/${e.version}`).sort());
  let rpcCount = 0;
  for (const section of sections) {
    await t.test(`${section.group} ${section.version}`, () => {
      const service = (catalog as unknown as Record<string, Record<string, DescService>>)[section.group][section.version];
      assert.equal(service.typeName, section.service);
      assert.equal(service.file.proto.package, section.pkg);
      assert.deepEqual(service.methods.map((m) => [m.name, m.input.name, m.output.name]), section.rpcs);
      rpcCount += service.methods.length;
      const file = service.file;
      const ours = new Map<string, DescMessage>(file.messages.map((m) => [m.name, m]));
      assert.deepEqual([...ours.keys()].sort(), [...section.messages.keys()].sort(), "message names");
      for (const [name, fields] of section.messages) {
        const message = ours.get(name)!;
        assert.deepEqual(message.fields.map((f) => [f.number, f.name, typeOf(f), label(f), f.jsonName]), fields, `message ${name}`);
      }
      assert.deepEqual(
        new Map(file.enums.map((e) => [e.name, e.values.map((v) => [v.name, v.number])])),
        section.enums,
        "enums",
      );
    });
  }
  assert.equal(rpcCount, 139);
});
