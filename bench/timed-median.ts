/**
 * Runs `fn` `runs` times one after the other and answers the median wall time and the median CPU time
 * of this process (user + system, all its threads) per run, in milliseconds.
 */
export async function timedMedian(fn: () => Promise<unknown>, runs = 5): Promise<{ ms: number; cpuMs: number }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    await fn();
    wall.push(performance.now() - w0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { ms: +median(wall).toFixed(1), cpuMs: +median(cpu).toFixed(1) };
}
