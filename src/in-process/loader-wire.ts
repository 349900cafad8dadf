/**
 * The request bytes a Node.js driver's grpc-js client (@grpc/proto-loader over protobufjs, on
 * Node.js) puts on the wire for a plain request object — so that the in-process client hands the
 * daemon's own boundary (decode, then the transport's size limit) exactly what the daemon would
 * receive, and answers what it answers:
 *
 * - fields are read and coerced as protobufjs `fromObject` does (loader-shape.ts; its TypeErrors
 *   are the serializer's errors);
 * - a field the object gives (not null/undefined) is written even when it holds the default
 *   (protobufjs writes every property it set, `""`, `0` and `false` included); repeated fields
 *   only when non-empty (numeric ones packed), map entries each with key and value; an enum name
 *   protobufjs does not know leaves the field out;
 * - strings are encoded as protobufjs's BufferWriter encodes them on Node.js: a string shorter than
 *   40 UTF-16 units by protobufjs's own UTF-8 writer, which writes a lone surrogate as its 3-byte
 *   (invalid UTF-8) form — the daemon then refuses the request as not valid UTF-8 —, a longer one
 *   through Buffer, which writes U+FFFD for a lone surrogate (the daemon goes ahead with it).
 *
 * Pure, no I/O; recursion bounded as fromLoaderShape bounds it (100 levels). The catalog's requests
 * have singular string, bool, uint32, int64, enum and message fields only; lists and maps follow
 * the same protobufjs rules (map keys as loader-shape.ts converts them).
 */
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { enumFrom, fromLoaderShape, mapKeyFrom, scalarFrom } from "./loader-shape.ts";

/** protobufjs's BufferWriter threshold: strings shorter than this go through its own UTF-8 writer. */
const PROTOBUFJS_SHORT_STRING = 40;

/** UTF-8 as protobufjs's BufferWriter writes `text` on Node.js (see module doc). */
export function protobufjsUtf8(text: string): Uint8Array {
  if (text.length >= PROTOBUFJS_SHORT_STRING) return Buffer.from(text, "utf8");
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push((c >> 6) | 0xc0, (c & 63) | 0x80);
    else if ((c & 0xfc00) === 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      c = 0x10000 + ((c & 0x3ff) << 10) + (text.charCodeAt(++i) & 0x3ff);
      out.push((c >> 18) | 0xf0, ((c >> 12) & 63) | 0x80, ((c >> 6) & 63) | 0x80, (c & 63) | 0x80);
    } else out.push((c >> 12) | 0xe0, ((c >> 6) & 63) | 0x80, (c & 63) | 0x80);
  }
  return Uint8Array.from(out);
}

const WIRE: Record<ScalarType, WireType> = {
  [ScalarType.DOUBLE]: WireType.Bit64, [ScalarType.FLOAT]: WireType.Bit32, [ScalarType.INT64]: WireType.Varint, [ScalarType.UINT64]: WireType.Varint,
  [ScalarType.INT32]: WireType.Varint, [ScalarType.FIXED64]: WireType.Bit64, [ScalarType.FIXED32]: WireType.Bit32, [ScalarType.BOOL]: WireType.Varint,
  [ScalarType.STRING]: WireType.LengthDelimited, [ScalarType.BYTES]: WireType.LengthDelimited, [ScalarType.UINT32]: WireType.Varint,
  [ScalarType.SFIXED32]: WireType.Bit32, [ScalarType.SFIXED64]: WireType.Bit64, [ScalarType.SINT32]: WireType.Varint, [ScalarType.SINT64]: WireType.Varint,
};

/** Writes one converted scalar value (no tag). */
function scalar(w: BinaryWriter, type: ScalarType, v: unknown): void {
  switch (type) {
    case ScalarType.DOUBLE: w.double(v as number); break;
    case ScalarType.FLOAT: w.float(v as number); break;
    case ScalarType.INT64: w.int64(v as bigint); break;
    case ScalarType.UINT64: w.uint64(v as bigint); break;
    case ScalarType.INT32: w.int32(v as number); break;
    case ScalarType.FIXED64: w.fixed64(v as bigint); break;
    case ScalarType.FIXED32: w.fixed32(v as number); break;
    case ScalarType.BOOL: w.bool(v as boolean); break;
    case ScalarType.STRING: w.string(v as string); break;
    case ScalarType.BYTES: w.bytes(v as Uint8Array); break;
    case ScalarType.UINT32: w.uint32(v as number); break;
    case ScalarType.SFIXED32: w.sfixed32(v as number); break;
    case ScalarType.SFIXED64: w.sfixed64(v as bigint); break;
    case ScalarType.SINT32: w.sint32(v as number); break;
    case ScalarType.SINT64: w.sint64(v as bigint); break;
  }
}

/** Writes one value of `kind` for `field` with its tag `no` (a message as a length-delimited sub-message). */
function value(w: BinaryWriter, no: number, field: DescField, kind: "scalar" | "enum" | "message", source: unknown, type?: ScalarType): void {
  if (kind === "message") {
    w.tag(no, WireType.LengthDelimited).fork();
    fields(w, field.message!, source as Record<string, unknown>);
    w.join();
  } else if (kind === "enum") {
    w.tag(no, WireType.Varint).int32(enumFrom(field.enum!, source, true)!);
  } else {
    w.tag(no, WIRE[type!]);
    scalar(w, type!, scalarFrom(type!, source));
  }
}

function fields(w: BinaryWriter, desc: DescMessage, source: Record<string, unknown>): void {
  if (desc.fields.length === 0) return;
  for (const field of [...desc.fields].sort((a, b) => a.number - b.number)) {
    const v = source[field.name];
    switch (field.fieldKind) {
      case "scalar":
        if (v != null) value(w, field.number, field, "scalar", v, field.scalar);
        break;
      case "enum":
        if (v != null && enumFrom(field.enum, v, false) !== undefined) value(w, field.number, field, "enum", v);
        break;
      case "message":
        if (v != null) value(w, field.number, field, "message", v);
        break;
      case "list": {
        const items = v as unknown[] | null | undefined;
        if (!items || items.length === 0) break;
        if (field.listKind === "scalar" && field.scalar !== ScalarType.STRING && field.scalar !== ScalarType.BYTES) {
          w.tag(field.number, WireType.LengthDelimited).fork();
          for (const item of items) scalar(w, field.scalar, scalarFrom(field.scalar, item));
          w.join();
        } else if (field.listKind === "enum") {
          w.tag(field.number, WireType.LengthDelimited).fork();
          for (const item of items) w.int32(enumFrom(field.enum, item, true)!);
          w.join();
        } else for (const item of items) value(w, field.number, field, field.listKind, item, field.listKind === "scalar" ? field.scalar : undefined);
        break;
      }
      case "map": {
        if (!v) break;
        const map = v as Record<string, unknown>;
        for (const key of Object.keys(map)) {
          if (key === "__proto__") continue;
          const item = map[key];
          if (field.mapKind === "enum" && enumFrom(field.enum, item, false) === undefined) continue;
          w.tag(field.number, WireType.LengthDelimited).fork();
          w.tag(1, WIRE[field.mapKey]);
          scalar(w, field.mapKey, field.mapKey === ScalarType.STRING ? key : scalarFrom(field.mapKey, mapKeyFrom(field.mapKey, key)));
          value(w, 2, field, field.mapKind, item, field.mapKind === "scalar" ? field.scalar : undefined);
          w.join();
        }
        break;
      }
    }
  }
}

/** The bytes proto-loader's serializer sends for `request` (see module doc); throws where it throws. */
export function loaderWireBytes(desc: DescMessage, request: unknown): Uint8Array {
  fromLoaderShape(desc, request); // protobufjs's checks and errors, before anything is written
  const w = new BinaryWriter(protobufjsUtf8);
  fields(w, desc, request as Record<string, unknown>);
  return w.finish();
}
