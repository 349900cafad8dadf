// The Grafana dashboard and the Prometheus scrape example against a real Prometheus (Debian's
// package, on 127.0.0.1, temporary storage) scraping the live daemon every second while calls run:
// promtool accepts our exposition, the example job (its relabelling included) scrapes the daemon,
// and every panel query and template-variable query of the dashboard returns data.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { connectGroup } from "../../src/client/connect-group.ts";
import { repoRoot, startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";

const dashboardFile = path.join(repoRoot, "deploy/grafana/csi-proxy-dashboard.json");
const scrapeFile = path.join(repoRoot, "deploy/prometheus/csi-proxy-scrape.yaml");
const node = "node-a"; // the node name the example's relabelling turns into `instance`
const have = (bin: string) => spawnSync(bin, ["--version"]).status === 0;
const skip = have("prometheus") && have("promtool") ? false : "prometheus/promtool not installed (scripts/install-test-tools.sh needs root)";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.once("error", reject);
  });
}

interface Panel { title: string; type: string; targets?: { expr: string }[] }

/** Grafana's template variables as this test's Prometheus sees them (All = the variable's allValue). */
function substitute(expr: string): string {
  return expr
    .replaceAll("$__rate_interval", "10s")
    .replaceAll("$__range", "5m")
    .replaceAll("$job", "csi-proxy")
    .replaceAll("$instance", node)
    .replaceAll("$service", ".*")
    .replaceAll("$method", ".*");
}

describe("Grafana dashboard and Prometheus scrape example", { skip }, () => {
  let work: string;
  let daemon: DaemonProcess;
  let prometheus: ChildProcess;
  let api: string;
  let metricsAddress: string;
  const query = async (q: string) => {
    const res = await fetch(`${api}/api/v1/query?${new URLSearchParams({ query: q }).toString()}`);
    const body = (await res.json()) as { status: string; error?: string; data: { resultType: string; result: unknown[] } };
    assert.equal(body.status, "success", `${q}: ${body.error}`);
    return body.data.result;
  };

  before(async () => {
    work = mkdtempSync(path.join(tmpdir(), "csi-proxy-prom-"));
    metricsAddress = `127.0.0.1:${await freePort()}`;
    daemon = await startDaemonProcess({ args: ["-metrics-bind-address", metricsAddress] });
    // The example job as written, with Kubernetes pod discovery replaced by one static target that
    // carries the labels pod discovery gives the csi-proxy pod (Debian's build has no Kubernetes SD).
    const example = readFileSync(scrapeFile, "utf8");
    const staticTarget = [
      "    static_configs:",
      `      - targets: ["${metricsAddress}"]`,
      "        labels:",
      "          __meta_kubernetes_pod_container_port_name: metrics",
      `          __meta_kubernetes_pod_node_name: ${node}`,
      "          __meta_kubernetes_pod_name: csi-proxy-x1",
      "",
    ].join("\n");
    const config = example
      .replace(/^    kubernetes_sd_configs:\n(?:      .*\n)+/m, staticTarget)
      .replace(/scrape_interval: \S+/, "scrape_interval: 1s")
      .replace(/scrape_timeout: \S+/, "scrape_timeout: 1s");
    assert.notEqual(config, example);
    writeFileSync(path.join(work, "prometheus.yml"), `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n${config}`);
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    prometheus = spawn("prometheus", [
      `--config.file=${path.join(work, "prometheus.yml")}`, `--storage.tsdb.path=${path.join(work, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn",
    ], { stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    prometheus.stderr!.setEncoding("utf8").on("data", (s: string) => (log += s));
    for (let i = 0; ; i++) {
      const ready = await fetch(`${api}/-/ready`).then((r) => r.ok, () => false);
      if (ready) break;
      if (i > 100 || prometheus.exitCode !== null) throw new Error(`prometheus not ready:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Calls while Prometheus scrapes: successes, coded errors, a range of latencies.
    const fs = await connectGroup("filesystem", { socketDir: daemon.socketDir, versions: ["v1"] });
    const disk = await connectGroup("disk", { socketDir: daemon.socketDir, versions: ["v1"] });
    try {
      const until = Date.now() + 6000;
      while (Date.now() < until) {
        await fs.client.pathExists({ path: daemon.kubeletDir });
        await fs.client.pathExists({ path: "/etc" }).catch(() => {}); // PermissionDenied
        await disk.client.getDiskStats({ diskNumber: 4_000_000 }).catch(() => {}); // NotFound
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      fs.close();
      disk.close();
    }
    // Two more scrapes after the last call.
    await new Promise((r) => setTimeout(r, 2500));
  });
  after(async () => {
    if (prometheus && prometheus.exitCode === null) {
      prometheus.kill("SIGTERM");
      await new Promise((r) => prometheus.once("exit", r));
    }
    await daemon?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("promtool accepts the exposition and the scrape example", async () => {
    const exposition = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    assert.match(exposition, /^grpc_server_handled_total\{grpc_code="PermissionDenied",grpc_method="PathExists"/m);
    const check = spawnSync("promtool", ["check", "metrics"], { input: exposition, encoding: "utf8" });
    assert.equal(check.status, 0, check.stdout + check.stderr);
    const config = spawnSync("promtool", ["check", "config", path.join(work, "prometheus.yml")], { encoding: "utf8" });
    assert.equal(config.status, 0, config.stdout + config.stderr);
  });

  it("the example job scrapes the daemon, labelled by node", async () => {
    const up = (await query('up{job="csi-proxy"}')) as { metric: Record<string, string>; value: [number, string] }[];
    assert.equal(up.length, 1);
    assert.equal(up[0].value[1], "1");
    assert.equal(up[0].metric.instance, node);
    assert.equal(up[0].metric.pod, "csi-proxy-x1");
  });

  it("every panel query returns data", async () => {
    const dashboard = JSON.parse(readFileSync(dashboardFile, "utf8")) as { panels: Panel[] };
    const panels = dashboard.panels.filter((p) => p.type !== "row");
    assert.ok(panels.length >= 10);
    const empty: string[] = [];
    let queries = 0;
    for (const panel of panels) {
      assert.ok(panel.targets?.length, `${panel.title} has queries`);
      for (const target of panel.targets!) {
        queries++;
        const result = (await query(substitute(target.expr))) as { value: [number, string] }[];
        if (!result.length || result.every((r) => r.value[1] === "NaN")) empty.push(`${panel.title}: ${target.expr}`);
      }
    }
    assert.deepEqual(empty, [], "queries without data");
    assert.ok(queries >= panels.length);
  });

  it("every template variable lists values", async () => {
    const dashboard = JSON.parse(readFileSync(dashboardFile, "utf8")) as { templating: { list: { name: string; type: string; definition?: string }[] } };
    for (const v of dashboard.templating.list.filter((t) => t.type === "query")) {
      const m = /^label_values\((.*),\s*(\w+)\)$/.exec(v.definition!);
      assert.ok(m, `${v.name}: ${v.definition}`);
      const selector = substitute(m[1]).replace(/=~"\.\*"/g, '=~".+"');
      const res = await fetch(`${api}/api/v1/label/${m[2]}/values?${new URLSearchParams({ "match[]": selector }).toString()}`);
      const body = (await res.json()) as { data: string[] };
      assert.ok(body.data.length > 0, `${v.name} has values`);
    }
  });
});
