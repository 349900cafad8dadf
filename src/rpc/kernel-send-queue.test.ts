// src/rpc/kernel-send-queue.ts on Linux Unix sockets: what the kernel holds for a peer that does not read.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { kernelSendQueue, prepareKernelSendQueue } from "./kernel-send-queue.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("kernelSendQueue (src/rpc/kernel-send-queue.ts)", { skip: process.platform !== "linux" ? "SIOCOUTQ: Linux only" : false }, () => {
  it("counts the bytes written to a socket whose peer does not read, beyond Node's writableLength; 0 once the peer read them", async () => {
    await prepareKernelSendQueue();
    const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-outq-"));
    const address = path.join(dir, "q.sock");
    let serverSide!: net.Socket;
    const server = net.createServer();
    const accepted = new Promise<void>((r) => server.once("connection", (s: net.Socket) => ((serverSide = s), r())));
    await new Promise<void>((r) => server.listen(address, r));
    const client = net.connect(address);
    client.pause(); // reads nothing
    try {
      await accepted;
      serverSide.write(Buffer.alloc(12_000));
      await sleep(50);
      assert.equal(serverSide.writableLength, 0, "Node handed it all to the kernel");
      const held = kernelSendQueue(serverSide);
      assert.ok(held >= 12_000, `${held} bytes in the kernel's queue`);
      client.resume();
      await sleep(100);
      assert.equal(kernelSendQueue(serverSide), 0);
    } finally {
      client.destroy();
      serverSide?.destroy();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
