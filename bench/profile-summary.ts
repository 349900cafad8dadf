// Summarises a V8 .cpuprofile (node --cpu-prof): self time per function, largest first.
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** One line per function: milliseconds and share of all samples (idle included), `top` lines. */
export function summariseCpuProfile(profile: CpuProfile, top: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const where = url ? ` ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}` : "";
    const key = `${functionName || "(anonymous)"}${where}`;
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, t]) => `  ${(t / 1000).toFixed(0).padStart(6)} ms ${((100 * t) / total).toFixed(1).padStart(5)}%  ${k}`)
    .join("\n");
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** Summarises a V8 .heapprofile (node --heap-prof: sampled allocations still live at exit): bytes per allocating function. */
export function summariseHeapProfile(profile: { head: HeapNode }, top: number): string {
  const self = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapNode) => {
    const { functionName, url, lineNumber } = n.callFrame;
    const key = `${functionName || "(anonymous)"}${url ? ` ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}` : ""}`;
    self.set(key, (self.get(key) ?? 0) + n.selfSize);
    total += n.selfSize;
    n.children.forEach(walk);
  };
  walk(profile.head);
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, b]) => `  ${(b / 1024).toFixed(0).padStart(6)} KiB ${((100 * b) / total).toFixed(1).padStart(5)}%  ${k}`)
    .join("\n") + `\n  total sampled live: ${(total / 1048576).toFixed(1)} MiB`;
}
