/**
 * Converts between protobuf-es messages and the plain objects a grpc-js client built by
 * @grpc/proto-loader works with, for the options Node.js drivers use (`keepCase: true, longs:
 * String, enums: String, defaults: true, oneofs: true`):
 *
 * - `fromLoaderShape` accepts what proto-loader's serializer (protobufjs `fromObject`) accepts and
 *   coerces it the same way: strings with `String(v)`, bools with `Boolean(v)`, int32 `v|0`, uint32
 *   `v>>>0`, doubles `Number(v)`, 64-bit integers from numbers, decimal strings or `{low, high}`
 *   (wrapping to 64 bits as Long does), enums by name or number (an unknown name leaves the field
 *   unset), unknown properties ignored, `null`/`undefined` fields unset. It throws the same
 *   TypeErrors (`.<package>.<Message>: object expected`, `…: array expected`) where protobufjs does.
 * - `toLoaderShape` gives what proto-loader's deserializer returns: field names as in the .proto,
 *   64-bit integers as decimal strings, enum names (the number when the value has no name), every
 *   field present: scalars with their default, unset message fields `null`, empty lists `[]`, empty
 *   maps `{}`, map keys as strings; a set oneof member also names itself in the oneof's property.
 *
 * Pure functions, no I/O; recursion bounded by protobufjs's own limit (100 levels).
 */
import { create, ScalarType, type DescEnum, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";

const RECURSION_LIMIT = 100;

const isObject = (value: unknown): value is Record<string, unknown> => Boolean(value && typeof value === "object");

/** protobufjs' `fullName` of a message (`.v1.PathExistsRequest`) or of one of its fields. */
const fullName = (message: DescMessage, field?: DescField) => `.${message.typeName}${field ? `.${field.name}` : ""}`;

const is64 = (t: ScalarType) =>
  t === ScalarType.INT64 || t === ScalarType.SINT64 || t === ScalarType.SFIXED64 || t === ScalarType.UINT64 || t === ScalarType.FIXED64;
const isUnsigned64 = (t: ScalarType) => t === ScalarType.UINT64 || t === ScalarType.FIXED64;

const wrap64 = (value: bigint, unsigned: boolean) => (unsigned ? BigInt.asUintN(64, value) : BigInt.asIntN(64, value));

/** Long.fromNumber: NaN → 0, saturating at the type's bounds, fraction truncated. */
function longFromNumber(value: number, unsigned: boolean): bigint {
  if (Number.isNaN(value)) return 0n;
  if (unsigned) {
    if (value < 0) return 0n;
    if (value >= 2 ** 64) return 2n ** 64n - 1n;
  } else {
    if (value <= -(2 ** 63)) return -(2n ** 63n);
    if (value + 1 >= 2 ** 63) return 2n ** 63n - 1n;
  }
  return BigInt(Math.trunc(value));
}

/** Long.fromString (radix 10): eight-digit chunks through parseInt, wrapping to 64 bits. */
function longFromString(text: string, unsigned: boolean): bigint {
  if (text.length === 0) throw Error("empty string");
  if (text === "NaN" || text === "Infinity" || text === "+Infinity" || text === "-Infinity") return 0n;
  const hyphen = text.indexOf("-");
  if (hyphen > 0) throw Error("interior hyphen");
  if (hyphen === 0) return wrap64(-longFromString(text.substring(1), unsigned), unsigned);
  let result = 0n;
  for (let i = 0; i < text.length; i += 8) {
    const size = Math.min(8, text.length - i);
    const chunk = parseInt(text.substring(i, i + size), 10);
    result = wrap64(result * 10n ** BigInt(size) + longFromNumber(chunk, false), unsigned);
  }
  return result;
}

/** Long.fromValue: a number, a decimal string, or anything with `low`/`high` 32-bit halves. */
function longFromValue(value: unknown, unsigned: boolean): bigint {
  if (typeof value === "number") return longFromNumber(value, unsigned);
  if (typeof value === "string") return longFromString(value, unsigned);
  const bits = value as { low?: unknown; high?: unknown };
  const low = BigInt((bits.low as number) >>> 0);
  const high = BigInt((bits.high as number) | 0);
  return wrap64((high << 32n) | low, unsigned);
}

export function scalarFrom(type: ScalarType, value: unknown): unknown {
  switch (type) {
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return Number(value);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return (value as number) >>> 0;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return (value as number) | 0;
    case ScalarType.STRING:
      return String(value);
    case ScalarType.BOOL:
      return Boolean(value);
    case ScalarType.BYTES:
      if (typeof value === "string") return new Uint8Array(Buffer.from(value, "base64"));
      return Uint8Array.from(value as ArrayLike<number>);
    default:
      return longFromValue(value, isUnsigned64(type));
  }
}

/** The enum conversion of protobufjs: a name or number it knows; another number as is; else unset (lists: the default). */
export function enumFrom(desc: DescEnum, value: unknown, inList: boolean): number | undefined {
  for (const v of desc.values) if (value === v.name || value === v.number) return v.number;
  if (typeof value === "number") return value | 0;
  return inList ? desc.values[0]?.number ?? 0 : undefined;
}

/** A map key as protobuf-es keeps it (protobufjs writes the string key with the key type's writer). */
export function mapKeyFrom(type: ScalarType, key: string): string | number {
  if (type === ScalarType.STRING) return key;
  if (is64(type)) return String(longFromValue(key, isUnsigned64(type)));
  if (type === ScalarType.BOOL) return key ? 1 : 0;
  return scalarFrom(type, key) as number;
}

/** A plain object as proto-loader's serializer reads it → a protobuf-es message of `desc`. Throws where protobufjs throws. */
export function fromLoaderShape<Desc extends DescMessage>(desc: Desc, object: unknown, depth = 0): Message & Record<string, unknown> {
  const message = create(desc) as unknown as Message & Record<string, unknown>;
  if (desc.fields.length === 0) return message;
  if (!isObject(object)) throw TypeError(`${fullName(desc)}: object expected`);
  if (depth > RECURSION_LIMIT) throw Error("maximum nesting depth exceeded");
  const source = object;
  for (const field of desc.fields) {
    const value = source[field.name];
    const set = (v: unknown) => {
      if (field.oneof) message[field.oneof.localName] = { case: field.localName, value: v };
      else message[field.localName] = v;
    };
    switch (field.fieldKind) {
      case "map": {
        if (!value) break;
        if (!isObject(value)) throw TypeError(`${fullName(desc, field)}: object expected`);
        const out: Record<string, unknown> = {};
        for (const key of Object.keys(value)) {
          if (key === "__proto__") continue;
          const v = value[key];
          let converted: unknown;
          if (field.mapKind === "message") {
            if (!isObject(v)) throw TypeError(`${fullName(desc, field)}: object expected`);
            converted = fromLoaderShape(field.message, v, depth + 1);
          } else if (field.mapKind === "enum") {
            converted = enumFrom(field.enum, v, false);
            if (converted === undefined) continue;
          } else converted = scalarFrom(field.scalar, v);
          out[mapKeyFrom(field.mapKey, key)] = converted;
        }
        message[field.localName] = out;
        break;
      }
      case "list": {
        if (!value) break;
        if (!Array.isArray(value)) throw TypeError(`${fullName(desc, field)}: array expected`);
        message[field.localName] = value.map((item: unknown) => {
          if (field.listKind === "message") {
            if (!isObject(item)) throw TypeError(`${fullName(desc, field)}: object expected`);
            return fromLoaderShape(field.message, item, depth + 1);
          }
          if (field.listKind === "enum") return enumFrom(field.enum, item, true);
          return scalarFrom(field.scalar, item);
        });
        break;
      }
      case "enum": {
        const converted = enumFrom(field.enum, value, false);
        if (converted !== undefined) set(converted);
        break;
      }
      case "message":
        if (value == null) break;
        if (!isObject(value)) throw TypeError(`${fullName(desc, field)}: object expected`);
        set(fromLoaderShape(field.message, value, depth + 1));
        break;
      case "scalar":
        if (value != null) set(scalarFrom(field.scalar, value));
        break;
    }
  }
  return message;
}

function scalarTo(type: ScalarType, value: unknown): unknown {
  if (is64(type)) return String(value);
  if (type === ScalarType.BYTES) return Buffer.from(value as Uint8Array);
  return value;
}

const enumTo = (desc: DescEnum, value: number) => desc.values.find((v) => v.number === value)?.name ?? value;

/** A protobuf-es message → what proto-loader's deserializer gives for the same bytes (see module doc). */
export function toLoaderShape(desc: DescMessage, message: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of desc.fields) {
    if (field.oneof) {
      const chosen = message[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
      if (chosen?.case !== field.localName) continue; // oneof members get no default
      out[field.name] =
        field.fieldKind === "message"
          ? toLoaderShape(field.message, chosen.value as Record<string, unknown>)
          : field.fieldKind === "enum"
            ? enumTo(field.enum, chosen.value as number)
            : scalarTo((field as { scalar: ScalarType }).scalar, chosen.value);
      out[field.oneof.name] = field.name;
      continue;
    }
    const value = message[field.localName];
    switch (field.fieldKind) {
      case "map": {
        const map: Record<string, unknown> = {};
        for (const [key, v] of Object.entries((value ?? {}) as Record<string, unknown>)) {
          map[String(key)] =
            field.mapKind === "message"
              ? toLoaderShape(field.message, v as Record<string, unknown>)
              : field.mapKind === "enum"
                ? enumTo(field.enum, v as number)
                : scalarTo(field.scalar, v);
        }
        out[field.name] = map;
        break;
      }
      case "list":
        out[field.name] = ((value ?? []) as unknown[]).map((item) =>
          field.listKind === "message"
            ? toLoaderShape(field.message, item as Record<string, unknown>)
            : field.listKind === "enum"
              ? enumTo(field.enum, item as number)
              : scalarTo(field.scalar, item),
        );
        break;
      case "message":
        out[field.name] = value === undefined ? null : toLoaderShape(field.message, value as Record<string, unknown>);
        break;
      case "enum":
        out[field.name] = enumTo(field.enum, value as number);
        break;
      case "scalar":
        out[field.name] = scalarTo(field.scalar, value);
        break;
    }
  }
  return out;
}
