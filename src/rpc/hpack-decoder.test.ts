// The request-header decoder of src/rpc: RFC 7541's own examples (Huffman and dynamic table), a
// cross-check against hpack.js's encoder, and the malformed blocks that must be refused.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import hpack from "hpack.js";
import { HpackDecoder, HpackError } from "./hpack-decoder.ts";

const decode = (d: HpackDecoder, hex: string) => {
  const out: [string, string][] = [];
  d.decode(Buffer.from(hex.replace(/\s/g, ""), "hex"), (n, v) => out.push([n, v]));
  return out;
};

describe("HpackDecoder", () => {
  it("decodes RFC 7541 C.4 (requests with Huffman coding, one connection's dynamic table)", () => {
    const d = new HpackDecoder();
    assert.deepEqual(decode(d, "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"), [
      [":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"],
    ]);
    assert.deepEqual(decode(d, "8286 84be 5886 a8eb 1064 9cbf"), [
      [":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"], ["cache-control", "no-cache"],
    ]);
    assert.deepEqual(decode(d, "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"), [
      [":method", "GET"], [":scheme", "https"], [":path", "/index.html"], [":authority", "www.example.com"], ["custom-key", "custom-value"],
    ]);
  });

  it("decodes what hpack.js encodes, across many blocks sharing one table (evictions included)", () => {
    const compressor = (hpack as unknown as { compressor: { create(o: object): any } }).compressor.create({ table: { size: 4096 } });
    const d = new HpackDecoder();
    for (let i = 0; i < 300; i++) {
      const headers = [
        { name: ":method", value: "POST" },
        { name: ":path", value: `/v1.Filesystem/PathExists` },
        { name: ":authority", value: i % 2 ? "\\\\.\\pipe\\csi-proxy-filesystem-v1" : "%5C%5C.%5Cpipe%5Ccsi-proxy-filesystem-v1" },
        { name: "grpc-timeout", value: `${i * 7919}u` },
        { name: `x-custom-${i % 40}`, value: "v".repeat(i % 97) + "é" },
      ];
      compressor.write(headers);
      const chunks: Buffer[] = [];
      for (let c = compressor.read(); c; c = compressor.read()) chunks.push(c);
      const out: [string, string][] = [];
      d.decode(Buffer.concat(chunks), (n, v) => out.push([n, v]));
      assert.deepEqual(out, headers.map((h) => [h.name, h.value]), `block ${i}`);
    }
  });

  it("refuses malformed blocks with HpackError", () => {
    for (const hex of ["80", "c0", "ff8080808010", "4085", "0003616263", "3fe21f"]) {
      assert.throws(() => decode(new HpackDecoder(), hex), HpackError, hex);
    }
    // A table-size update after a field.
    assert.throws(() => decode(new HpackDecoder(), "8220"), HpackError);
    // Huffman padding longer than 7 bits / not all ones.
    assert.throws(() => decode(new HpackDecoder(), "0001 61 82 1fff"), HpackError);
  });
});
