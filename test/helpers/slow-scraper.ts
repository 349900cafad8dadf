// Hostile scrapers of the metrics endpoint, run as their own process so that their work does not
// delay the legit clients measuring latency in the test process:
//   node test/helpers/slow-scraper.ts <host:port> <connections> <requests per connection> <duration ms> [reconnect delay ms]
// Each connection sends its requests (`GET /metrics`, pipelined, in one write) and then reads one
// byte a second. A connection the server closes is opened again after the reconnect delay (default
// 100 ms) until the duration ends, so the server faces `connections` of them all along. Prints
// "ready" once the first connections are open, and at the end one JSON line: connections opened,
// closed by the server, bytes sent and read.
import * as net from "node:net";

const [address, connectionsText, requestsText, durationText, reconnectText] = process.argv.slice(2);
const [, host, port] = /^(.*):(\d+)$/.exec(address)!;
const connections = Number(connectionsText), requests = Number(requestsText), duration = Number(durationText);
const reconnectDelay = Number(reconnectText ?? 100);
const REQUEST = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"; // 34 bytes: 2 000 of them are 68 KB
const burst = Buffer.from(REQUEST.repeat(requests), "latin1");

const result = { opened: 0, closedByServer: 0, sentBytes: 0, readBytes: 0 };
const deadline = performance.now() + duration;
const running = () => performance.now() < deadline;
const sockets = new Set<net.Socket>();

function open(): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), host);
    sockets.add(socket);
    socket.on("error", () => {});
    socket.once("connect", () => {
      result.opened++;
      result.sentBytes += burst.length;
      socket.write(burst);
      socket.pause();
      resolve();
    });
    socket.once("close", () => {
      sockets.delete(socket);
      resolve();
      if (!running()) return;
      result.closedByServer++;
      setTimeout(() => running() && void open(), reconnectDelay);
    });
  });
}

// One byte a second from each connection.
const reader = setInterval(() => {
  for (const s of sockets) {
    const b = s.read(1) as Buffer | null;
    if (b) result.readBytes += b.length;
  }
}, 1000);

await Promise.all(Array.from({ length: connections }, open));
process.stdout.write("ready\n");
await new Promise((r) => setTimeout(r, Math.max(0, deadline - performance.now())));
clearInterval(reader);
for (const s of sockets) s.destroy();
process.stdout.write(`${JSON.stringify(result)}\n`);
