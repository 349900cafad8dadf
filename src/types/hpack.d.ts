// Minimal typing of the part of hpack.js the authority shim uses (decoding only).
declare module "hpack.js" {
  import type { Duplex } from "node:stream";
  interface Decompressor extends Duplex {
    execute(): void;
    read(): { name: string; value: string; neverIndex: boolean } | null;
  }
  const hpack: { decompressor: { create(options: { table: { maxSize: number } }): Decompressor } };
  export default hpack;
}
