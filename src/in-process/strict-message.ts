/**
 * Strict checking of a protobuf-es init object against its message descriptor, for the typed
 * in-process API: what TypeScript's types promise, checked at run time for callers without them.
 * Accepted: a plain object (or a protobuf-es message of that type) whose own properties are fields
 * of the message by their TypeScript name (`$typeName` may be present and must match); per field,
 * `undefined` = unset; strings must be well-formed strings (no lone surrogate), bools booleans,
 * 32-bit integers integral numbers in range, 64-bit integers bigints (or safe-integer numbers) in
 * range, floats numbers, enums one of the enum's numbers, messages checked the same way, lists arrays, maps plain objects whose keys
 * parse as the key type. Anything else: InvalidArgument naming the field path and what was given.
 */
import { ScalarType, type DescEnum, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { CsiProxyError, Code } from "../errors.ts";

const invalid = (where: string, what: string) => new CsiProxyError(Code.InvalidArgument, `${where}: ${what}`);

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `a string`;
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : `the number ${value}`;
  if (typeof value === "bigint") return `the bigint ${value}`;
  return `a ${typeof value}`;
}

const RANGES: Partial<Record<ScalarType, [bigint, bigint]>> = {
  [ScalarType.INT32]: [-(2n ** 31n), 2n ** 31n - 1n],
  [ScalarType.SINT32]: [-(2n ** 31n), 2n ** 31n - 1n],
  [ScalarType.SFIXED32]: [-(2n ** 31n), 2n ** 31n - 1n],
  [ScalarType.UINT32]: [0n, 2n ** 32n - 1n],
  [ScalarType.FIXED32]: [0n, 2n ** 32n - 1n],
  [ScalarType.INT64]: [-(2n ** 63n), 2n ** 63n - 1n],
  [ScalarType.SINT64]: [-(2n ** 63n), 2n ** 63n - 1n],
  [ScalarType.SFIXED64]: [-(2n ** 63n), 2n ** 63n - 1n],
  [ScalarType.UINT64]: [0n, 2n ** 64n - 1n],
  [ScalarType.FIXED64]: [0n, 2n ** 64n - 1n],
};
const is64 = (t: ScalarType) => [ScalarType.INT64, ScalarType.SINT64, ScalarType.SFIXED64, ScalarType.UINT64, ScalarType.FIXED64].includes(t);

/** A UTF-16 surrogate without its pair (String.prototype.isWellFormed's negation). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkScalar(type: ScalarType, value: unknown, where: string): void {
  switch (type) {
    case ScalarType.STRING:
      if (typeof value !== "string") throw invalid(where, `expected a string, got ${describe(value)}`);
      // A lone surrogate has no UTF-8 form: the daemon refuses such bytes ("not valid" UTF-8).
      if (LONE_SURROGATE.test(value)) throw invalid(where, "expected a well-formed string, got one with a lone surrogate (no UTF-8 form)");
      return;
    case ScalarType.BOOL:
      if (typeof value !== "boolean") throw invalid(where, `expected a boolean, got ${describe(value)}`);
      return;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      if (typeof value !== "number") throw invalid(where, `expected a number, got ${describe(value)}`);
      return;
    case ScalarType.BYTES:
      if (!(value instanceof Uint8Array)) throw invalid(where, `expected a Uint8Array, got ${describe(value)}`);
      return;
  }
  const range = RANGES[type]!;
  let n: bigint;
  if (typeof value === "bigint" && is64(type)) n = value;
  else if (typeof value === "number" && Number.isSafeInteger(value)) n = BigInt(value);
  else throw invalid(where, `expected ${is64(type) ? "a bigint (or a safe integer)" : "an integer"}, got ${describe(value)}`);
  if (n < range[0] || n > range[1]) throw invalid(where, `${n} is out of range [${range[0]}, ${range[1]}]`);
}

function checkEnum(desc: DescEnum, value: unknown, where: string): void {
  if (typeof value !== "number" || !desc.values.some((v) => v.number === value)) {
    throw invalid(where, `expected one of ${desc.values.map((v) => `${v.number} (${v.name})`).join(", ")}, got ${describe(value)}`);
  }
}

function checkMapKey(type: ScalarType, key: string, where: string): void {
  if (type === ScalarType.STRING) return;
  if (type === ScalarType.BOOL) {
    if (key !== "true" && key !== "false") throw invalid(where, `map key ${JSON.stringify(key)} is not true/false`);
    return;
  }
  if (!/^-?\d+$/.test(key)) throw invalid(where, `map key ${JSON.stringify(key)} is not an integer`);
  checkScalar(type, is64(type) ? BigInt(key) : Number(key), `${where}[${key}]`);
}

function checkValue(field: DescField, kind: "scalar" | "enum" | "message", value: unknown, where: string, depth: number): void {
  if (kind === "message") checkMessage(field.message!, value, where, depth + 1);
  else if (kind === "enum") checkEnum(field.enum!, value, where);
  else checkScalar(field.scalar!, value, where);
}

const isPlain = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
};

/** Throws InvalidArgument unless `value` is a valid init object of `desc` (see module doc). */
export function checkMessage(desc: DescMessage, value: unknown, where = "request", depth = 0): void {
  if (depth > 100) throw invalid(where, "nested too deeply");
  if (!isPlain(value)) throw invalid(where, `expected an object of ${desc.typeName}, got ${describe(value)}`);
  const byName = new Map<string, DescField>(desc.fields.filter((f) => !f.oneof).map((f) => [f.localName, f]));
  const oneofs = new Map(desc.oneofs.map((o) => [o.localName, o]));
  for (const key of Object.keys(value)) {
    const v = value[key];
    const at = `${where}.${key}`;
    if (key === "$typeName") {
      if (v !== desc.typeName) throw invalid(at, `is ${describe(v)}, not ${JSON.stringify(desc.typeName)}`);
      continue;
    }
    const oneof = oneofs.get(key);
    if (oneof) {
      if (v === undefined) continue;
      if (!isPlain(v)) throw invalid(at, `expected { case, value }, got ${describe(v)}`);
      if (v.case === undefined) continue;
      const member = oneof.fields.find((f) => f.localName === v.case);
      if (!member) throw invalid(`${at}.case`, `expected one of ${oneof.fields.map((f) => f.localName).join(", ")}, got ${describe(v.case)}`);
      checkValue(member, member.fieldKind as "scalar" | "enum" | "message", v.value, `${at}.value`, depth);
      continue;
    }
    const field = byName.get(key);
    if (!field) throw invalid(at, `${desc.typeName} has no such field (fields: ${[...byName.keys(), ...oneofs.keys()].join(", ") || "none"})`);
    if (v === undefined) continue;
    switch (field.fieldKind) {
      case "list":
        if (!Array.isArray(v)) throw invalid(at, `expected an array, got ${describe(v)}`);
        v.forEach((item, i) => checkValue(field, field.listKind, item, `${at}[${i}]`, depth));
        break;
      case "map":
        if (!isPlain(v)) throw invalid(at, `expected an object (a map), got ${describe(v)}`);
        for (const [k, item] of Object.entries(v)) {
          checkMapKey(field.mapKey, k, at);
          checkValue(field, field.mapKind, item, `${at}[${k}]`, depth);
        }
        break;
      default:
        checkValue(field, field.fieldKind, v, at, depth);
    }
  }
}
