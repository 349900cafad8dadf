import type { Registry } from "prom-client";

export interface ExpositionSnapshot {
  /** The exposition's Content-Type (Prometheus text format 0.0.4). */
  readonly contentType: string;
  /**
   * The exposition rendered at most `intervalMs` ago (rendered now when older: one render at a time,
   * every caller meanwhile waits for it). The Buffer is shared and must not be modified.
   * Rejects when the registry fails to render; the next call tries again.
   */
  get(): Promise<Buffer>;
}

/**
 * Renders the registry at most once per `intervalMs` (start to start), on demand: a scrape costs a
 * write of the shared snapshot, never a walk of every metric, however many scrapers ask.
 */
export function createExpositionSnapshot(registry: Registry, intervalMs: number): ExpositionSnapshot {
  let body: Buffer | undefined;
  let renderedAt = -Infinity;
  let rendering: Promise<Buffer> | undefined;
  const render = async () => {
    renderedAt = performance.now();
    try {
      // prom-client prints `le` first; Go prints it last. Same series either way, but keep the bytes familiar.
      const text = (await registry.metrics()).replace(/^(\w+_bucket)\{le="([^"]*)",([^}]*)\}/gm, '$1{$3,le="$2"}');
      body = Buffer.from(text, "utf8");
      return body;
    } catch (err) {
      renderedAt = -Infinity;
      throw err;
    } finally {
      rendering = undefined;
    }
  };
  return {
    contentType: registry.contentType,
    get() {
      if (rendering) return rendering;
      if (body && performance.now() - renderedAt < intervalMs) return Promise.resolve(body);
      return (rendering = render());
    },
  };
}
