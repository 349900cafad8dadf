/**
 * Command-line parsing compatible with Go's standard `flag` package, so the
 * original csi-proxy command lines (`-kubelet-path C:\var\lib\kubelet -v=4`)
 * keep working unchanged. No npm parser accepts single-dash long flags.
 *
 * Rules (identical to Go's `flag.FlagSet.Parse`):
 *  - `-name` and `--name` are the same flag.
 *  - Non-bool flags take `-name=value` or `-name value` (the next argument).
 *  - Bool flags take `-name` (true) or `-name=<bool>`; they never consume the
 *    next argument. Accepted: 1 0 t f T F true false TRUE FALSE True False.
 *  - Int flags accept decimal, `0x` hex, `0o`/leading-`0` octal and `0b`
 *    binary with an optional sign (Go's `strconv.ParseInt(s, 0, 64)`, minus
 *    `_` digit separators); values beyond ±2^53-1 are "value out of range".
 *  - `stringList` flags are repeatable; occurrences accumulate in order and the
 *    first occurrence replaces the default.
 *  - `--` ends flag parsing and is dropped; the first non-flag argument (and a
 *    lone `-`) ends flag parsing and is kept as the first positional.
 */

export type FlagKind = "string" | "bool" | "int" | "stringList";
export type FlagValue = string | boolean | number | string[];

export interface FlagSpec {
  /** Flag name without leading dashes, e.g. `kubelet-path`. */
  readonly name: string;
  readonly kind: FlagKind;
  /** Value when the flag is absent; by kind: `""`, `false`, `0`, `[]`. */
  readonly default?: string | boolean | number | readonly string[];
  /** Help text; a `back-quoted` word names the argument in usage output. */
  readonly usage: string;
}

interface KindTypes {
  string: string;
  bool: boolean;
  int: number;
  stringList: string[];
}

/** Parsed values keyed by flag name; precisely typed when specs are literals. */
export type FlagValues<S extends readonly FlagSpec[]> = {
  [F in S[number] as F["name"]]: KindTypes[F["kind"]];
};

export interface ParsedFlags<S extends readonly FlagSpec[]> {
  /** Every defined flag: its parsed value, or its default when absent. */
  values: FlagValues<S>;
  /** Arguments remaining after flag parsing stopped. */
  positionals: string[];
  /** Names of the flags present on the command line (Go's `flag.Visit`). */
  set: ReadonlySet<string>;
}

/** A command-line error; `message` is Go's text, `help` marks -h/-help requests. */
export class FlagError extends Error {
  override readonly name = "FlagError";
  readonly help: boolean;
  constructor(message: string, help = false) {
    super(message);
    this.help = help;
  }
}

const TRUE_WORDS = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE_WORDS = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/**
 * Parses `argv` (without the program name) against `specs`.
 * @throws FlagError with Go's message on bad input; with `help: true` for an
 *   undefined `-h`/`-help`. Throws TypeError for invalid or duplicate specs.
 */
export function parseGoFlags<const S extends readonly FlagSpec[]>(
  argv: readonly string[],
  specs: S,
): ParsedFlags<S> {
  const byName = new Map<string, FlagSpec>();
  const values: Record<string, FlagValue> = {};
  for (const spec of specs) {
    if (byName.has(spec.name)) throw new TypeError(`flag redefined: ${spec.name}`);
    byName.set(spec.name, spec);
    values[spec.name] = defaultOf(spec);
  }
  const set = new Set<string>();
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (arg.length < 2 || arg[0] !== "-") break;
    let dashes = 1;
    if (arg[1] === "-") {
      if (arg.length === 2) {
        i++; // "--" terminates the flags and is consumed
        break;
      }
      dashes = 2;
    }
    let name = arg.slice(dashes);
    if (name[0] === "-" || name[0] === "=") throw new FlagError(`bad flag syntax: ${arg}`);
    let value: string | undefined;
    const eq = name.indexOf("=");
    if (eq > 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    const spec = byName.get(name);
    if (spec === undefined) {
      if (name === "help" || name === "h") throw new FlagError("flag: help requested", true);
      throw new FlagError(`flag provided but not defined: -${name}`);
    }
    if (spec.kind === "bool") {
      if (value === undefined) values[name] = true;
      else if (TRUE_WORDS.has(value)) values[name] = true;
      else if (FALSE_WORDS.has(value)) values[name] = false;
      else throw new FlagError(`invalid boolean value ${goQuote(value)} for -${name}: parse error`);
    } else {
      if (value === undefined) {
        if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: -${name}`);
        value = argv[++i];
      }
      values[name] = convert(spec, value, set.has(name) ? values[name] : undefined);
    }
    set.add(name);
  }
  return { values: values as FlagValues<S>, positionals: argv.slice(i), set };
}

function defaultOf(spec: FlagSpec): FlagValue {
  const d = spec.default;
  const bad = () => new TypeError(`flag -${spec.name}: default ${String(d)} is not a ${spec.kind}`);
  switch (spec.kind) {
    case "string":
      if (d !== undefined && typeof d !== "string") throw bad();
      return d ?? "";
    case "bool":
      if (d !== undefined && typeof d !== "boolean") throw bad();
      return d ?? false;
    case "int":
      if (d !== undefined && !Number.isSafeInteger(d)) throw bad();
      return (d as number | undefined) ?? 0;
    case "stringList":
      if (d !== undefined && !Array.isArray(d)) throw bad();
      return [...((d as readonly string[] | undefined) ?? [])];
  }
}

/** Converts a non-bool value; `previous` is the list so far for repeated stringList flags. */
function convert(spec: FlagSpec, value: string, previous: FlagValue | undefined): FlagValue {
  switch (spec.kind) {
    case "int": {
      const n = parseGoInt(value);
      if (typeof n === "string") throw new FlagError(`invalid value ${goQuote(value)} for flag -${spec.name}: ${n}`);
      return n;
    }
    case "stringList":
      return [...((previous as string[] | undefined) ?? []), value];
    default:
      return value;
  }
}

const INT_SYNTAX = /^([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/;

/** Go's `strconv.ParseInt(s, 0, 64)` limited to safe integers; returns the error text on failure. */
function parseGoInt(s: string): number | "parse error" | "value out of range" {
  const m = INT_SYNTAX.exec(s);
  if (m === null) return "parse error";
  let digits = m[2];
  if (digits.length > 1 && digits[0] === "0" && /[0-7]/.test(digits[1])) digits = "0o" + digits.slice(1);
  const magnitude = BigInt(digits);
  if (magnitude > BigInt(Number.MAX_SAFE_INTEGER)) return "value out of range";
  const n = Number(magnitude);
  return m[1] === "-" ? -n : n;
}

const GO_ESCAPES: Record<string, string> = {
  '"': '\\"', "\\": "\\\\", "\x07": "\\a", "\b": "\\b", "\f": "\\f",
  "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
};

/** Go's `%q` for strings (ASCII control characters escaped as `\xNN`). */
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.charCodeAt(0);
    if (GO_ESCAPES[ch] !== undefined) out += GO_ESCAPES[ch];
    else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + '"';
}

/**
 * Go's `flag.Usage` text: `Usage of <program>:` then each flag sorted by name
 * as `flag.PrintDefaults` prints it, each line ending in `\n`. Defaults are
 * shown only when they differ from the kind's zero value.
 */
export function formatUsage(specs: readonly FlagSpec[], programName: string): string {
  let out = programName === "" ? "Usage:\n" : `Usage of ${programName}:\n`;
  const sorted = [...specs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const spec of sorted) {
    let line = `  -${spec.name}`;
    const [argName, usage] = unquoteUsage(spec);
    if (argName !== "") line += " " + argName;
    // Go puts the usage of one-letter bool flags on the same line.
    line += line.length <= 4 ? "\t" : "\n    \t";
    line += usage.replaceAll("\n", "\n    \t");
    const def = defaultOf(spec);
    if (spec.kind === "string" && def !== "") line += ` (default ${goQuote(def as string)})`;
    else if (spec.kind === "stringList" && (def as string[]).length > 0) line += ` (default [${(def as string[]).join(",")}])`;
    else if ((spec.kind === "bool" && def === true) || (spec.kind === "int" && def !== 0)) line += ` (default ${String(def)})`;
    out += line + "\n";
  }
  return out;
}

/** Go's `flag.UnquoteUsage`: the argument name and the usage with back quotes removed. */
function unquoteUsage(spec: FlagSpec): [string, string] {
  const start = spec.usage.indexOf("`");
  const end = start < 0 ? -1 : spec.usage.indexOf("`", start + 1);
  if (end > 0) {
    const name = spec.usage.slice(start + 1, end);
    return [name, spec.usage.slice(0, start) + name + spec.usage.slice(end + 1)];
  }
  const byKind: Record<FlagKind, string> = { string: "string", int: "int", bool: "", stringList: "value" };
  return [byKind[spec.kind], spec.usage];
}
