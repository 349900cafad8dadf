/**
 * The running kernel's own type information (/sys/kernel/btf/vmlinux, BTF): type ids by name and
 * kind, and byte offsets of struct members (anonymous structs and unions inside are searched too).
 * What a BPF program needs to read kernel structures at the offsets of this very kernel.
 *
 * Cost: one read of the file (5–6 MB) and one pass over its type records (~150 000), ~50–100 ms,
 * once per process (the caller keeps the parsed result); memory: the offsets of each record (4 bytes
 * per type), the file itself is dropped after the lookups the caller asks for at once.
 */
import { readFileSync } from "node:fs";

export const BTF_PATH = "/sys/kernel/btf/vmlinux";

const KIND_STRUCT = 4;
const KIND_UNION = 5;
export const KIND_FUNC = 12;

export interface KernelBtf {
  /** The id of the type named `name` of kind `kind`; undefined when there is none. */
  typeId(name: string, kind: number): number | undefined;
  /** Byte offset and size of member `member` of struct `struct` (anonymous members searched); undefined when absent. */
  memberOffset(struct: string, member: string): { offset: number; size: number } | undefined;
}

/** Parses the kernel's BTF; throws when the file is missing or not BTF. */
export function readKernelBtf(file = BTF_PATH): KernelBtf {
  const buf = readFileSync(file);
  if (buf.readUInt16LE(0) !== 0xeb9f) throw new Error(`${file} is not little-endian BTF`);
  const hdrLen = buf.readUInt32LE(4);
  const typeStart = hdrLen + buf.readUInt32LE(8);
  const typeEnd = typeStart + buf.readUInt32LE(12);
  const strStart = hdrLen + buf.readUInt32LE(16);
  const name = (off: number) => {
    const at = strStart + off;
    return buf.toString("latin1", at, buf.indexOf(0, at));
  };
  /** Byte offset of each type record, by id (id 0 is void). */
  const words = new Uint32Array(buf.buffer, buf.byteOffset, buf.byteLength >>> 2);
  if (buf.byteOffset % 4 !== 0 || typeStart % 4 !== 0) throw new Error(`${file}: unaligned type section`);
  const at: number[] = [0];
  /** Name offset of each type, by id. */
  const nameOff: number[] = [0];
  for (let p = typeStart; p < typeEnd; ) {
    at.push(p);
    nameOff.push(words[p >>> 2]);
    const info = words[(p >>> 2) + 1];
    const vlen = info & 0xffff;
    const kind = (info >>> 24) & 0x1f;
    p += 12;
    switch (kind) {
      case 1: case 14: case 17: p += 4; break; // INT, VAR, DECL_TAG
      case 3: p += 12; break; // ARRAY
      case 4: case 5: case 15: case 19: p += 12 * vlen; break; // STRUCT, UNION, DATASEC, ENUM64
      case 6: case 13: p += 8 * vlen; break; // ENUM, FUNC_PROTO
      case 2: case 7: case 8: case 9: case 10: case 11: case 12: case 16: case 18: break; // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG
      default: throw new Error(`${file}: BTF kind ${kind} unknown here (the ids after it could not be counted)`);
    }
  }
  const kindOf = (id: number) => (buf.readUInt32LE(at[id] + 4) >>> 24) & 0x1f;
  /** Size in bytes of a type, through typedefs and qualifiers. */
  const sizeOf = (id: number): number => {
    for (let i = 0; i < 16 && id; i++) {
      const k = kindOf(id);
      if (k === 2) return 8; // PTR
      if (k === 8 || k === 9 || k === 10 || k === 11 || k === 18) id = buf.readUInt32LE(at[id] + 8);
      else return buf.readUInt32LE(at[id] + 8);
    }
    return 0;
  };
  const strEnd = strStart + buf.readUInt32LE(20);
  /** Offsets in the string section spelling `n` (one in a deduplicated BTF). */
  const nameOffsets = (n: string): Set<number> => {
    const out = new Set<number>();
    const needle = Buffer.from(`\0${n}\0`, "latin1");
    for (let i = buf.indexOf(needle, strStart); i >= 0 && i < strEnd; i = buf.indexOf(needle, i + 1)) out.add(i + 1 - strStart);
    return out;
  };
  const ids = (n: string): number[] => {
    const offs = nameOffsets(n);
    const out: number[] = [];
    if (offs.size) for (let id = 1; id < at.length; id++) if (offs.has(nameOff[id])) out.push(id);
    return out;
  };
  const findMember = (id: number, member: string, base: number): { offset: number; size: number } | undefined => {
    const p = at[id];
    const info = buf.readUInt32LE(p + 4);
    const bitfields = (info >>> 31) === 1;
    for (let i = 0, m = p + 12; i < (info & 0xffff); i++, m += 12) {
      const bits = buf.readUInt32LE(m + 8);
      const offset = base + (bitfields ? bits & 0xffffff : bits) / 8;
      const type = buf.readUInt32LE(m + 4);
      const mName = name(buf.readUInt32LE(m));
      if (mName === member) return { offset, size: sizeOf(type) };
      if (mName === "") {
        let t = type;
        while (t && [8, 9, 10, 11].includes(kindOf(t))) t = buf.readUInt32LE(at[t] + 8);
        if (t && (kindOf(t) === KIND_STRUCT || kindOf(t) === KIND_UNION)) {
          const inner = findMember(t, member, offset);
          if (inner) return inner;
        }
      }
    }
    return undefined;
  };
  return {
    typeId: (n, kind) => ids(n).find((id) => kindOf(id) === kind),
    memberOffset: (struct, member) => {
      for (const id of ids(struct)) {
        if (kindOf(id) !== KIND_STRUCT) continue;
        const found = findMember(id, member, 0);
        if (found) return found;
      }
      return undefined;
    },
  };
}
