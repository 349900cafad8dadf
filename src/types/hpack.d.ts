// Minimal typing of the parts of hpack.js used here: the decompressor (test helper) and the RFC 7541
// data tables (src/rpc/hpack-decoder.ts).
declare module "hpack.js" {
  import type { Duplex } from "node:stream";
  interface Decompressor extends Duplex {
    execute(): void;
    read(): { name: string; value: string; neverIndex: boolean } | null;
  }
  const hpack: { decompressor: { create(options: { table: { maxSize: number } }): Decompressor } };
  export default hpack;
}
declare module "hpack.js/lib/hpack/huffman.js" {
  /** RFC 7541 Appendix B: for each symbol 0..256 (256 = EOS), [code length in bits, code]. */
  export const encode: [number, number][];
}
declare module "hpack.js/lib/hpack/static-table.js" {
  /** RFC 7541 Appendix A: the 61 static entries, index 1 first. */
  export const table: { name: string; value: string }[];
}
