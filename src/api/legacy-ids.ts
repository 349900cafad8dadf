import { invalidArgument, quote } from "../errors.ts";

/**
 * Parses a legacy string disk id (v1alpha1–v1beta2 `diskID` / `disk_id`) as a decimal uint32.
 * Upstream wraps values ≥ 2³² silently; we refuse them. Failure: InvalidArgument, `prefix` (the
 * calling method's own wording, as upstream) followed by Go's strconv.ParseUint error text.
 */
export function parseDiskId(value: string, prefix: string): number {
  if (!/^\d{1,10}$/.test(value) || Number(value) > 0xffffffff) {
    const why = /^\d+$/.test(value) ? "value out of range" : "invalid syntax";
    throw invalidArgument(`${prefix}strconv.ParseUint: parsing ${quote(value)}: ${why}`);
  }
  return Number(value);
}

/** Renders a map keyed by disk number as the legacy string-keyed object. */
export function stringKeys<T, R>(map: Map<number, T>, convert: (value: T) => R): Record<string, R> {
  return Object.fromEntries([...map].map(([key, value]) => [String(key), convert(value)]));
}

/** Renders a map keyed by disk number as a protobuf-es uint32-keyed map object. */
export function numberKeys<T, R>(map: Map<number, T>, convert: (value: T) => R): Record<number, R> {
  return Object.fromEntries([...map].map(([key, value]) => [key, convert(value)]));
}
