/**
 * A caller's value as an error message describes it: its kind, and for short scalars the value
 * (`the string "rel/dir"`, `the number 5`, `null`, `an array`, `an object`). Strings are shown up
 * to 100 characters then "…"; never throws, whatever the value (proxies, throwing getters).
 */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  switch (typeof value) {
    case "string":
      return `the string ${JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value)}`;
    case "number":
      return Number.isNaN(value) ? "NaN" : `the number ${value}`;
    case "bigint":
      return `the bigint ${String(value).slice(0, 40)}`;
    case "boolean":
      return `the boolean ${value}`;
    case "symbol":
      return "a symbol";
    case "function":
      return "a function";
  }
  try {
    return Array.isArray(value) ? "an array" : "an object";
  } catch {
    return "an object"; // a revoked proxy's Array.isArray throws
  }
}
