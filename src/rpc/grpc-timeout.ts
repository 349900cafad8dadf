/**
 * Parses a `grpc-timeout` value: 1 to 8 digits and a unit (H, M, S, m, u, n) → milliseconds,
 * capped at 2^31 - 1 (the largest Node timer); undefined when the value is not of that form.
 */
export function parseGrpcTimeout(value: string): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (!m) return undefined;
  const n = Number(m[1]);
  const ms = { H: n * 3_600_000, M: n * 60_000, S: n * 1000, m: n, u: n / 1000, n: n / 1e6 }[m[2] as "H"];
  return Math.min(ms, 2 ** 31 - 1);
}
