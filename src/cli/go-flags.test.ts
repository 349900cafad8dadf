import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FlagError, formatUsage, parseGoFlags } from "./go-flags.ts";
import type { FlagSpec } from "./go-flags.ts";

const specs: FlagSpec[] = [
  { name: "kubelet-path", kind: "string", default: "C:\\var\\lib\\kubelet", usage: "Prefix path of the kubelet directory" },
  { name: "windows-service", kind: "bool", usage: "Configure as a Windows Service" },
  { name: "require-privacy", kind: "bool", default: true, usage: "Pass -RequirePrivacy" },
  { name: "v", kind: "int", usage: "number for the log level verbosity" },
  { name: "api", kind: "stringList", default: ["all"], usage: "API groups to serve" },
  { name: "x", kind: "string", usage: "one-letter string" },
];

const defaults = {
  "kubelet-path": "C:\\var\\lib\\kubelet",
  "windows-service": false,
  "require-privacy": true,
  v: 0,
  api: ["all"],
  x: "",
};

describe("parseGoFlags", () => {
  const ok: Array<{ name: string; argv: string[]; want: Partial<typeof defaults>; positionals?: string[]; set?: string[] }> = [
    { name: "no args gives defaults", argv: [], want: {} },
    { name: "single dash with =", argv: ["-kubelet-path=/k"], want: { "kubelet-path": "/k" }, set: ["kubelet-path"] },
    { name: "double dash with =", argv: ["--kubelet-path=/k"], want: { "kubelet-path": "/k" } },
    { name: "value as next arg", argv: ["-kubelet-path", "/k"], want: { "kubelet-path": "/k" } },
    { name: "double dash, next arg", argv: ["--kubelet-path", "/k"], want: { "kubelet-path": "/k" } },
    { name: "empty value with =", argv: ["-kubelet-path="], want: { "kubelet-path": "" } },
    { name: "value containing =", argv: ["-x=a=b"], want: { x: "a=b" } },
    { name: "next arg that looks like a flag is a value", argv: ["-x", "-v"], want: { x: "-v" } },
    { name: "last occurrence wins", argv: ["-x=1", "-x=2"], want: { x: "2" } },
    { name: "bare bool is true", argv: ["-windows-service"], want: { "windows-service": true } },
    { name: "bool does not consume next arg", argv: ["-windows-service", "false"], want: { "windows-service": true }, positionals: ["false"] },
    { name: "bool =false", argv: ["-require-privacy=false"], want: { "require-privacy": false } },
    { name: "bool =0", argv: ["-require-privacy=0"], want: { "require-privacy": false } },
    { name: "bool =f", argv: ["-require-privacy=f"], want: { "require-privacy": false } },
    { name: "bool =FALSE", argv: ["-require-privacy=FALSE"], want: { "require-privacy": false } },
    { name: "bool =False", argv: ["-require-privacy=False"], want: { "require-privacy": false } },
    { name: "bool =true", argv: ["-windows-service=true"], want: { "windows-service": true } },
    { name: "bool =1", argv: ["-windows-service=1"], want: { "windows-service": true } },
    { name: "bool =T", argv: ["-windows-service=T"], want: { "windows-service": true } },
    { name: "bool =TRUE", argv: ["--windows-service=TRUE"], want: { "windows-service": true } },
    { name: "bool =True", argv: ["-windows-service=True"], want: { "windows-service": true } },
    { name: "int decimal", argv: ["-v=4"], want: { v: 4 } },
    { name: "int next arg", argv: ["-v", "10"], want: { v: 10 } },
    { name: "int negative", argv: ["-v=-3"], want: { v: -3 } },
    { name: "int plus sign", argv: ["-v=+3"], want: { v: 3 } },
    { name: "int hex", argv: ["-v=0x1F"], want: { v: 31 } },
    { name: "int negative hex", argv: ["-v=-0x10"], want: { v: -16 } },
    { name: "int octal", argv: ["-v=0755"], want: { v: 493 } },
    { name: "int 0o octal", argv: ["-v=0o17"], want: { v: 15 } },
    { name: "int binary", argv: ["-v=0b101"], want: { v: 5 } },
    { name: "int zero", argv: ["-v=0"], want: { v: 0 } },
    { name: "stringList replaces default and accumulates", argv: ["-api=disk", "--api", "volume", "-api="], want: { api: ["disk", "volume", ""] } },
    { name: "-- ends flags and is dropped", argv: ["-v=1", "--", "-x=y"], want: { v: 1 }, positionals: ["-x=y"] },
    { name: "first non-flag ends flags", argv: ["-v=1", "serve", "-x=y"], want: { v: 1 }, positionals: ["serve", "-x=y"] },
    { name: "lone - is positional", argv: ["-", "-v=1"], want: {}, positionals: ["-", "-v=1"] },
    { name: "empty string is positional", argv: ["", "-v=1"], want: {}, positionals: ["", "-v=1"] },
    {
      name: "mixed csi-proxy command line",
      argv: ["-kubelet-path", "D:\\kubelet", "-windows-service", "-v=5", "--require-privacy=false"],
      want: { "kubelet-path": "D:\\kubelet", "windows-service": true, v: 5, "require-privacy": false },
      set: ["kubelet-path", "require-privacy", "v", "windows-service"],
    },
  ];
  for (const tc of ok) {
    it(tc.name, () => {
      const got = parseGoFlags(tc.argv, specs);
      assert.deepEqual(got.values, { ...defaults, ...tc.want });
      assert.deepEqual(got.positionals, tc.positionals ?? []);
      if (tc.set) assert.deepEqual([...got.set].sort(), tc.set);
    });
  }

  const errors: Array<{ name: string; argv: string[]; message: string; help?: boolean }> = [
    { name: "undefined flag", argv: ["-nope"], message: "flag provided but not defined: -nope" },
    { name: "undefined flag with value", argv: ["--nope=1"], message: "flag provided but not defined: -nope" },
    { name: "missing argument", argv: ["-x"], message: "flag needs an argument: -x" },
    { name: "missing int argument", argv: ["--v"], message: "flag needs an argument: -v" },
    { name: "bad boolean", argv: ["-windows-service=maybe"], message: 'invalid boolean value "maybe" for -windows-service: parse error' },
    { name: "empty boolean", argv: ["-windows-service="], message: 'invalid boolean value "" for -windows-service: parse error' },
    { name: "bad int", argv: ["-v", "abc"], message: 'invalid value "abc" for flag -v: parse error' },
    { name: "float int", argv: ["-v=1.5"], message: 'invalid value "1.5" for flag -v: parse error' },
    { name: "bad octal digit", argv: ["-v=08"], message: 'invalid value "08" for flag -v: parse error' },
    { name: "empty int", argv: ["-v="], message: 'invalid value "" for flag -v: parse error' },
    { name: "int out of range", argv: ["-v=99999999999999999999"], message: 'invalid value "99999999999999999999" for flag -v: value out of range' },
    { name: "three dashes", argv: ["---x"], message: "bad flag syntax: ---x" },
    { name: "leading =", argv: ["-=x"], message: "bad flag syntax: -=x" },
    { name: "double dash leading =", argv: ["--=x"], message: "bad flag syntax: --=x" },
    { name: "-h when undefined", argv: ["-h"], message: "flag: help requested", help: true },
    { name: "-help when undefined", argv: ["-help"], message: "flag: help requested", help: true },
    { name: "--help when undefined", argv: ["--help"], message: "flag: help requested", help: true },
  ];
  for (const tc of errors) {
    it(`error: ${tc.name}`, () => {
      assert.throws(
        () => parseGoFlags(tc.argv, specs),
        (err: unknown) => {
          assert.ok(err instanceof FlagError);
          assert.equal(err.name, "FlagError");
          assert.equal(err.message, tc.message);
          assert.equal(err.help, tc.help ?? false);
          return true;
        },
      );
    });
  }

  it("a defined -h is an ordinary flag", () => {
    const got = parseGoFlags(["-h"], [{ name: "h", kind: "bool", usage: "" }]);
    assert.equal(got.values.h, true);
  });

  it("does not share the default list between parses", () => {
    const a = parseGoFlags([], specs).values.api as string[];
    a.push("mutated");
    assert.deepEqual(parseGoFlags([], specs).values.api, ["all"]);
  });

  it("infers value types from literal specs", () => {
    const got = parseGoFlags(["-n=2", "-on"], [
      { name: "n", kind: "int", usage: "" },
      { name: "on", kind: "bool", usage: "" },
    ]);
    const n: number = got.values.n;
    const on: boolean = got.values.on;
    assert.equal(n + 1, 3);
    assert.equal(on, true);
  });

  const badSpecs: Array<{ name: string; specs: FlagSpec[] }> = [
    { name: "duplicate name", specs: [{ name: "a", kind: "string", usage: "" }, { name: "a", kind: "bool", usage: "" }] },
    { name: "string default on int", specs: [{ name: "a", kind: "int", default: "1", usage: "" }] },
    { name: "fractional int default", specs: [{ name: "a", kind: "int", default: 1.5, usage: "" }] },
    { name: "string default on bool", specs: [{ name: "a", kind: "bool", default: "true", usage: "" }] },
  ];
  for (const tc of badSpecs) {
    it(`rejects spec: ${tc.name}`, () => {
      assert.throws(() => parseGoFlags([], tc.specs), TypeError);
    });
  }
});

describe("formatUsage", () => {
  it("matches Go's flag.PrintDefaults layout", () => {
    const usage = formatUsage(
      [
        ...specs,
        { name: "b", kind: "bool", usage: "one-letter bool" },
        { name: "log_file", kind: "string", usage: "If non-empty, use this `file`\nsecond line" },
        { name: "zero", kind: "int", default: 0, usage: "zero default hidden" },
        { name: "q", kind: "string", default: 'say "hi"\t', usage: "quoted" },
      ],
      "csi-proxy",
    );
    assert.equal(
      usage,
      [
        "Usage of csi-proxy:",
        "  -api value",
        "    \tAPI groups to serve (default [all])",
        "  -b\tone-letter bool",
        "  -kubelet-path string",
        '    \tPrefix path of the kubelet directory (default "C:\\\\var\\\\lib\\\\kubelet")',
        "  -log_file file",
        "    \tIf non-empty, use this file",
        "    \tsecond line",
        "  -q string",
        '    \tquoted (default "say \\"hi\\"\\t")',
        "  -require-privacy",
        "    \tPass -RequirePrivacy (default true)",
        "  -v int",
        "    \tnumber for the log level verbosity",
        "  -windows-service",
        "    \tConfigure as a Windows Service",
        "  -x string",
        "    \tone-letter string",
        "  -zero int",
        "    \tzero default hidden",
        "",
      ].join("\n"),
    );
  });

  it("omits the program name when empty", () => {
    assert.equal(formatUsage([], ""), "Usage:\n");
  });

  it("shows non-zero int defaults", () => {
    assert.equal(formatUsage([{ name: "n", kind: "int", default: 3, usage: "n" }], "p"), "Usage of p:\n  -n int\n    \tn (default 3)\n");
  });
});
