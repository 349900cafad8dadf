import { encode as huffmanCodes } from "hpack.js/lib/hpack/huffman.js";
import { table as staticTable } from "hpack.js/lib/hpack/static-table.js";

/** Thrown for a header block that does not decode (RFC 7541 §4.3/§5): the connection is unusable (COMPRESSION_ERROR). */
export class HpackError extends Error {}

/**
 * The Huffman decoding tree of RFC 7541 Appendix B as a flat array: node n has children at
 * [2n] (bit 0) and [2n+1] (bit 1); a child ≥ 0 is an inner node, -1 - s is symbol s, 0 = none.
 */
const huffmanTree = (() => {
  const tree: number[] = [0, 0];
  for (let symbol = 0; symbol < huffmanCodes.length; symbol++) {
    const [bits, code] = huffmanCodes[symbol];
    let node = 0;
    for (let i = bits - 1; i >= 0; i--) {
      const slot = 2 * node + ((code >>> i) & 1);
      if (i === 0) tree[slot] = -1 - symbol;
      else {
        if (tree[slot] === 0) {
          tree[slot] = tree.length / 2;
          tree.push(0, 0);
        }
        node = tree[slot];
      }
    }
  }
  return Int32Array.from(tree);
})();

const EOS = 256;

function decodeHuffman(src: Buffer, start: number, end: number): string {
  const out = Buffer.allocUnsafe((end - start) * 2);
  let n = 0, node = 0, depth = 0, allOnes = true;
  for (let i = start; i < end; i++) {
    const byte = src[i];
    for (let b = 7; b >= 0; b--) {
      const bit = (byte >>> b) & 1;
      const next = huffmanTree[2 * node + bit];
      depth++;
      allOnes &&= bit === 1;
      if (next < 0) {
        const symbol = -1 - next;
        if (symbol === EOS) throw new HpackError("EOS in Huffman string");
        out[n++] = symbol;
        node = 0;
        depth = 0;
        allOnes = true;
      } else if (next === 0) throw new HpackError("invalid Huffman code");
      else node = next;
    }
  }
  // Padding: at most 7 bits, all ones (the EOS prefix).
  if (depth > 7 || !allOnes) throw new HpackError("invalid Huffman padding");
  return out.toString("latin1", 0, n);
}

/** Entry overhead counted against the table size (RFC 7541 §4.1). */
const ENTRY_OVERHEAD = 32;

/**
 * An HPACK decoder (RFC 7541) for one connection's request header blocks: header names and values
 * come out as latin1 strings (one char per octet, as on the wire). Every block of the connection must
 * go through `decode` in order, even for streams that are refused, to keep the dynamic table in sync.
 */
export class HpackDecoder {
  private names: string[] = [];
  private values: string[] = [];
  /** Ring buffer of the dynamic table: index 0 of the table (the newest entry) is at `head`. */
  private head = 0;
  private count = 0;
  private size = 0;
  private maxSize: number;
  private readonly settingsMax: number;
  private pos = 0;
  private block: Buffer = Buffer.alloc(0);

  constructor(maxTableSize = 4096) {
    this.maxSize = this.settingsMax = maxTableSize;
  }

  /** Decodes one complete header block, calling `onHeader` per field in order. Throws HpackError. */
  decode(block: Buffer, onHeader: (name: string, value: string) => void): void {
    this.block = block;
    this.pos = 0;
    let sawField = false;
    while (this.pos < block.length) {
      const first = block[this.pos];
      if (first & 0x80) {
        const index = this.integer(7);
        if (index === 0) throw new HpackError("index 0");
        onHeader(this.nameAt(index), this.valueAt(index));
        sawField = true;
      } else if ((first & 0xe0) === 0x20) {
        if (sawField) throw new HpackError("table size update after a header field");
        const size = this.integer(5);
        if (size > this.settingsMax) throw new HpackError("table size update above the limit");
        this.maxSize = size;
        this.evict(0);
      } else {
        // 01xxxxxx: incremental indexing (6-bit prefix); 0000xxxx without / 0001xxxx never indexed (4-bit).
        const indexing = (first & 0xc0) === 0x40;
        const index = this.integer(indexing ? 6 : 4);
        const name = index === 0 ? this.string() : this.nameAt(index);
        const value = this.string();
        if (indexing) this.add(name, value);
        onHeader(name, value);
        sawField = true;
      }
    }
    this.block = Buffer.alloc(0);
  }

  private integer(prefixBits: number): number {
    const block = this.block;
    const max = (1 << prefixBits) - 1;
    let value = block[this.pos++] & max;
    if (value < max) return value;
    for (let shift = 0; ; shift += 7) {
      if (this.pos >= block.length) throw new HpackError("truncated integer");
      if (shift > 21) throw new HpackError("integer overflow");
      const byte = block[this.pos++];
      value += (byte & 0x7f) * 2 ** shift;
      if (!(byte & 0x80)) return value;
    }
  }

  private string(): string {
    if (this.pos >= this.block.length) throw new HpackError("truncated string");
    const huffman = (this.block[this.pos] & 0x80) !== 0;
    const length = this.integer(7);
    const start = this.pos, end = start + length;
    if (end > this.block.length) throw new HpackError("truncated string");
    this.pos = end;
    return huffman ? decodeHuffman(this.block, start, end) : this.block.toString("latin1", start, end);
  }

  private nameAt(index: number): string {
    if (index <= staticTable.length) return staticTable[index - 1].name;
    return this.names[this.slot(index)];
  }

  private valueAt(index: number): string {
    if (index <= staticTable.length) return staticTable[index - 1].value;
    return this.values[this.slot(index)];
  }

  private slot(index: number): number {
    const i = index - staticTable.length - 1;
    if (i >= this.count) throw new HpackError(`index ${index} beyond the table`);
    const capacity = this.names.length;
    return (this.head + i) % capacity;
  }

  private add(name: string, value: string): void {
    const entry = name.length + value.length + ENTRY_OVERHEAD;
    this.evict(entry);
    if (entry > this.maxSize) return; // too big: the table ends up empty (§4.4)
    if (this.count === this.names.length) this.grow();
    const capacity = this.names.length;
    this.head = (this.head - 1 + capacity) % capacity;
    this.names[this.head] = name;
    this.values[this.head] = value;
    this.count++;
    this.size += entry;
  }

  /** Drops the oldest entries until `incoming` more octets fit. */
  private evict(incoming: number): void {
    const capacity = this.names.length;
    while (this.count > 0 && this.size + incoming > this.maxSize) {
      const oldest = (this.head + this.count - 1) % capacity;
      this.size -= this.names[oldest].length + this.values[oldest].length + ENTRY_OVERHEAD;
      this.names[oldest] = this.values[oldest] = "";
      this.count--;
    }
  }

  private grow(): void {
    const capacity = Math.max(16, this.names.length * 2);
    const names: string[] = new Array(capacity), values: string[] = new Array(capacity);
    for (let i = 0; i < this.count; i++) {
      const from = (this.head + i) % this.names.length;
      names[i] = this.names[from];
      values[i] = this.values[from];
    }
    this.names = names;
    this.values = values;
    this.head = 0;
  }
}
