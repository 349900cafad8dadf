// The metrics responder (src/metrics/metrics-server.ts, default limits) under connection floods, in
// process over TCP on 127.0.0.1 (attackers and scraper share the address, as in the field):
// slowloris heads and keep-alive scrapers that fill the connection cap and reconnect at once. A
// fresh scraper (one connection per scrape, as Prometheus after a restart) must be answered in
// ≥ 95 % of the scrapes a control run without attack answered, and keep-alive scrapers are paced.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import * as net from "node:net";
import { Gauge, Registry } from "prom-client";
import { serveMetrics, type MetricsServer } from "./metrics-server.ts";
import { metricsLimits } from "./metrics-limits.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SCRAPES = 40;

/** One scrape on a new connection; true when a whole 200 answer arrived within 2 s. */
function scrape(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    const chunks: Buffer[] = [];
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 2000);
    socket.on("error", () => done(false));
    socket.on("close", () => done(false));
    socket.on("connect", () => socket.write("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      const all = Buffer.concat(chunks), end = all.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(all.toString("latin1", 0, end))?.[1]);
      if (all.length >= end + 4 + length) done(all.toString("latin1", 0, 12) === "HTTP/1.1 200");
    });
  });
}

async function scrapes(host: string, port: number): Promise<number> {
  let answered = 0;
  for (let i = 0; i < SCRAPES; i++) {
    if (await scrape(host, port)) answered++;
    await sleep(25);
  }
  return answered;
}

/** `count` attacking connections, each reopened as soon as it closes, until stop(). */
function flood(host: string, port: number, count: number, behave: (socket: net.Socket, answered: () => void) => void) {
  let stopped = false, answers = 0;
  const sockets = new Set<net.Socket>();
  const open = () => {
    if (stopped) return;
    const socket = net.connect(port, host);
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => {
      sockets.delete(socket);
      setImmediate(open);
    });
    socket.on("connect", () => behave(socket, () => answers++));
  };
  for (let i = 0; i < count; i++) open();
  return {
    answers: () => answers,
    stop: () => {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

describe("metrics responder under connection floods (default limits)", () => {
  let server: MetricsServer, host: string, port: number;
  before(async () => {
    const registry = new Registry();
    new Gauge({ name: "up_gauge", help: "A gauge.", registers: [registry] }).set(1);
    server = await serveMetrics("127.0.0.1:0", registry);
    [host, port] = [server.address.split(":")[0], Number(server.address.split(":")[1])];
  });
  after(() => server.close());

  it(`slowloris: 200 connections sending a head one line every 200 ms, reopened at once: ≥ 95 % of a control's scrapes answered`, { timeout: 120_000 }, async () => {
    const control = await scrapes(host, port);
    const attack = flood(host, port, 200, (socket) => {
      socket.write("GET /metrics HTTP/1.1\r\n");
      const drip = setInterval(() => socket.write("X-A: b\r\n"), 200);
      socket.on("close", () => clearInterval(drip));
    });
    await sleep(500);
    const during = await scrapes(host, port);
    attack.stop();
    console.log(`# scrapes answered: control ${control}/${SCRAPES}, under slowloris ${during}/${SCRAPES}`);
    assert.ok(during >= 0.95 * control, `${during} of ${SCRAPES} answered under attack, ${control} in the control`);
  });

  it(`keep-alive flood: ${metricsLimits.maxConnections} scrapers (the cap) asking again as soon as answered: ≥ 95 % of a control's scrapes answered, each connection paced`, { timeout: 120_000 }, async () => {
    const control = await scrapes(host, port);
    const get = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    const attack = flood(host, port, metricsLimits.maxConnections, (socket, answered) => {
      socket.on("data", (d: Buffer) => {
        // One request per answer received (the gauge's exposition arrives in one read on loopback).
        if (d.includes("HTTP/1.1 200")) {
          answered();
          socket.write(get);
        }
      });
      socket.write(get);
    });
    await sleep(500);
    const started = performance.now(), before = attack.answers();
    const during = await scrapes(host, port);
    const seconds = (performance.now() - started) / 1000, flooded = attack.answers() - before;
    attack.stop();
    const bound = metricsLimits.maxAnswersPerSecond;
    console.log(`# scrapes answered: control ${control}/${SCRAPES}, under keep-alive flood ${during}/${SCRAPES}; flood answered ${(flooded / seconds).toFixed(0)}/s (process-wide pace ${bound}/s)`);
    assert.ok(during >= 0.95 * control, `${during} of ${SCRAPES} answered under attack, ${control} in the control`);
    assert.ok(flooded / seconds <= bound * 1.2, `${(flooded / seconds).toFixed(0)} answers/s to the flood (bound ${bound})`);
  });
});
