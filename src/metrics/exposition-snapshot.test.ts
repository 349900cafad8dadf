import assert from "node:assert/strict";
import { it } from "node:test";
import { Counter, Histogram, Registry } from "prom-client";
import { createExpositionSnapshot } from "./exposition-snapshot.ts";

it("renders at most once per interval, one render at a time, and retries after a failed render", async () => {
  const registry = new Registry();
  const c = new Counter({ name: "calls_total", help: "calls", registers: [registry] });
  let renders = 0;
  const metrics = registry.metrics.bind(registry);
  registry.metrics = async () => {
    renders++;
    if (renders === 3) throw new Error("render failed");
    return metrics();
  };
  const snap = createExpositionSnapshot(registry, 60_000);
  const [a, b] = await Promise.all([snap.get(), snap.get()]);
  assert.equal(renders, 1, "concurrent scrapes share one render");
  assert.equal(a, b);
  c.inc();
  assert.equal(await snap.get(), a, "within the interval the snapshot is served as it was");
  assert.match(a.toString(), /^calls_total 0$/m);
  const fresh = createExpositionSnapshot(registry, 0);
  assert.match((await fresh.get()).toString(), /^calls_total 1$/m);
  await assert.rejects(fresh.get(), /render failed/);
  assert.match((await fresh.get()).toString(), /^calls_total 1$/m, "the next call renders again");
  assert.equal(snap.contentType, registry.contentType);
});

it("histogram buckets carry `le` last, as Go prints them", async () => {
  const registry = new Registry();
  new Histogram({ name: "lat_seconds", help: "h", labelNames: ["m"], buckets: [0.1], registers: [registry] }).observe({ m: "x" }, 0.05);
  const text = (await createExpositionSnapshot(registry, 1000).get()).toString();
  assert.match(text, /^lat_seconds_bucket\{m="x",le="0.1"\} 1$/m);
});
