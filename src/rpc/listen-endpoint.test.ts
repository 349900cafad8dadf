// src/rpc/listen-endpoint.ts: the accept queue of a Unix socket endpoint holds a burst of clients
// connecting while the server's event loop is busy (Node's default backlog of 511 refused the rest
// with EAGAIN).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { listenEndpoint } from "./listen-endpoint.ts";

describe("listenEndpoint (src/rpc/listen-endpoint.ts)", { skip: process.platform === "win32" ? "Unix sockets" : false }, () => {
  it("1 500 clients connecting before the server accepts any: none refused (EAGAIN)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "csi-proxy-listen-"));
    const address = path.join(dir, "e.sock");
    const accepted: net.Socket[] = [];
    const server = await listenEndpoint(address, (socket) => accepted.push(socket));
    const clients: net.Socket[] = [];
    const errors: string[] = [];
    try {
      // All connect(2) calls are made in this turn: nothing is accepted until it ends.
      const connected = Array.from({ length: 1500 }, () => {
        const socket = net.connect(address);
        clients.push(socket);
        return new Promise<void>((resolve) => {
          socket.once("connect", () => resolve());
          socket.once("error", (err: NodeJS.ErrnoException) => (errors.push(err.code ?? err.message), resolve()));
        });
      });
      await Promise.all(connected);
      assert.deepEqual(errors, []);
    } finally {
      for (const s of [...clients, ...accepted]) s.destroy();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
