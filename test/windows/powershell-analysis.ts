/**
 * Static analysis of the PowerShell worker scripts, over the syntax tree of the real
 * PowerShell grammar (tree-sitter-powershell, run by web-tree-sitter's WASM build: no native code).
 *
 * The script is walked as PowerShell runs it: top-level statements, then every op's script block of
 * `$ops` with its `param($a)` bound to REQUEST DATA, descending into the script's own functions
 * with their parameters bound to the caller's values. A small abstract value follows each
 * expression: its possible string constants, the CIM class of the instances it holds, the keys of
 * a hashtable, whether it carries request data (taint), whether it is a script block of `$ops`.
 *
 * Rules (docs/windows.md lists them):
 *  PS1  the script parses: no ERROR or MISSING node.
 *  PS2  no dynamic code: no Invoke-Expression/iex, Invoke-Command/icm, Add-Type, Start-Process,
 *       Start-Job, [scriptblock]::Create, .InvokeScript/.NewScriptBlock; `&`/`.` only invoke a
 *       script block taken from the constant `$ops` table.
 *  PS3  no string building: no expandable ("…"/here-) string with a variable or sub-expression;
 *       -Filter, -Query and -QueryDialect only with a constant single-quoted string.
 *  PS4  no pattern fed from request data: no request data in a parameter the table marks as
 *       wildcard-capable, as an operand of -like/-notlike/-match/-notmatch/-replace/-split (any
 *       case variant), or as the pattern of a [regex]/[WildcardPattern] call.
 *  PS5  CIM identifiers are constants: -Namespace, -ClassName, -MethodName, -ResultClassName and
 *       -Association are single-quoted strings (possibly through the script's own functions'
 *       parameters), never request data.
 *  SIG  every cmdlet is in test/windows/cim-signatures.ts; every parameter is one of its parameters, all
 *       of them in one parameter set, positional arguments only where it has positions; every CIM
 *       class, property, method (static or instance as documented) and argument name is there,
 *       every association links the classes it is used between.
 */
import { createRequire } from "node:module";
import { Parser, Language, type Node } from "web-tree-sitter";
import { CMDLETS, CIM_CLASSES, CIM_ASSOCIATIONS, COMMON_PARAMETERS } from "./cim-signatures.ts";

let parser: Parser | undefined;

/** The PowerShell parser (WASM), loaded once. */
export async function powershellParser(): Promise<Parser> {
  if (!parser) {
    const require = createRequire(import.meta.url);
    await Parser.init();
    const language = await Language.load(require.resolve("tree-sitter-powershell/tree-sitter-powershell.wasm"));
    parser = new Parser();
    parser.setLanguage(language);
  }
  return parser;
}

/** A CIM method call the walk resolved. */
export interface CimCall {
  cls: string;
  method: string;
  isStatic: boolean;
  args: string[];
  op: string;
}

export interface Analysis {
  violations: string[];
  /** The ops of `$ops`, in order. */
  ops: string[];
  /** cmdlet → parameters used. */
  cmdlets: Map<string, Set<string>>;
  cimCalls: CimCall[];
  /** `class.property` read. */
  properties: Set<string>;
}

interface Value {
  strings?: Set<string>;
  cls?: Set<string>;
  keys?: Set<string>;
  tainted?: boolean;
  opsBlock?: boolean;
  /** A script block (to be run by Where-/ForEach-Object). */
  block?: Node;
}

const NONE: Value = {};

function union(a: Value | undefined, b: Value | undefined): Value {
  if (!a) return b ?? NONE;
  if (!b) return a;
  const set = (x?: Set<string>, y?: Set<string>) => (x || y ? new Set([...(x ?? []), ...(y ?? [])]) : undefined);
  return { strings: set(a.strings, b.strings), cls: set(a.cls, b.cls), keys: set(a.keys, b.keys), tainted: a.tainted || b.tainted, opsBlock: a.opsBlock || b.opsBlock, block: a.block ?? b.block };
}

class Env {
  readonly vars = new Map<string, Value>();
  readonly parent?: Env;
  constructor(parent?: Env) {
    this.parent = parent;
  }
  get(name: string): Value | undefined {
    return this.vars.get(name) ?? this.parent?.get(name);
  }
  set(name: string, v: Value): void {
    this.vars.set(name, v);
  }
  snapshot(): Map<string, Value> {
    return new Map(this.vars);
  }
}

/** Expression wrappers with one meaningful child. */
const WRAPPERS = new Set([
  "pipeline",
  "pipeline_chain",
  "logical_expression",
  "bitwise_expression",
  "comparison_expression",
  "additive_expression",
  "multiplicative_expression",
  "format_expression",
  "range_expression",
  "array_literal_expression",
  "unary_expression",
  "left_assignment_expression",
  "argument_expression",
  "logical_argument_expression",
  "bitwise_argument_expression",
  "comparison_argument_expression",
  "additive_argument_expression",
  "multiplicative_argument_expression",
  "format_argument_expression",
  "range_argument_expression",
  "parenthesized_expression",
  "expression_with_unary_operator",
  "key_expression",
]);

const named = (n: Node): Node[] => n.namedChildren.filter((c): c is Node => c !== null);

function unwrap(n: Node): Node {
  let cur = n;
  for (;;) {
    const kids = named(cur);
    if (kids.length === 1 && WRAPPERS.has(cur.type)) cur = kids[0];
    else return cur;
  }
}

const DYNAMIC_CODE = new Set(["invoke-expression", "iex", "invoke-command", "icm", "add-type", "start-process", "saps", "start", "start-job"]);
const PATTERN_OPERATORS = /^-[ci]?(like|notlike|match|notmatch|replace|split)$/i;
const IDENTIFIER_PARAMETERS = new Set(["Namespace", "ClassName", "MethodName", "ResultClassName", "Association"]);
const CONSTANT_TEXT_PARAMETERS = new Set(["Filter", "Query", "QueryDialect"]);
/** .NET members of a CimInstance (not CIM properties). */
const CIM_INSTANCE_MEMBERS = new Set(["CimClass", "CimInstanceProperties", "CimSystemProperties", "PSObject"]);
/** Members of the arrays @(…) makes. */
const ARRAY_MEMBERS = new Set(["Count", "Length"]);
const NUMERIC_TYPES = new Set(["int", "int32", "int64", "long", "uint16", "uint32", "uint64", "byte", "bool", "boolean", "char", "double"]);

interface FunctionDef {
  params: string[];
  body: Node;
}

/** Walks one worker script (exactly the text the worker receives). */
export function analyze(p: Parser, script: string): Analysis {
  const tree = p.parse(script)!;
  const a: Analysis = { violations: [], ops: [], cmdlets: new Map(), cimCalls: [], properties: new Set() };
  let currentOp = "top level";
  const where = (n: Node) => `line ${n.startPosition.row + 1}:${n.startPosition.column + 1}`;
  const snippet = (n: Node) => JSON.stringify(n.text.length > 80 ? n.text.slice(0, 77) + "..." : n.text);
  const violation = (rule: string, n: Node, text: string) => a.violations.push(`${rule} ${where(n)} [${currentOp}]: ${text} — ${snippet(n)}`);

  // PS1: syntax
  const walkAll = (n: Node, visit: (n: Node) => void) => {
    visit(n);
    for (const c of n.children) if (c) walkAll(c, visit);
  };
  walkAll(tree.rootNode, (n) => {
    if (n.type === "ERROR") violation("PS1", n, "syntax error");
    else if (n.isMissing) violation("PS1", n, `missing ${n.type}`);
    // PS3: expandable strings with variables or sub-expressions
    if ((n.type === "expandable_string_literal" || n.type === "expandable_here_string_literal") && named(n).some((c) => c.type === "variable" || c.type === "sub_expression")) {
      violation("PS3", n, "expandable string built from values");
    }
    // PS2: .NET ways to make code
    if (n.type === "invokation_expression" || n.type === "member_access") {
      const member = named(n).find((c) => c.type === "member_name")?.text ?? "";
      if (/^(InvokeScript|NewScriptBlock)$/i.test(member)) violation("PS2", n, `dynamic code (${member})`);
      if (/^Create$/i.test(member) && /^\[(scriptblock|System\.Management\.Automation\.ScriptBlock)\]/i.test(n.text)) violation("PS2", n, "[scriptblock]::Create");
    }
  });

  const functions = new Map<string, FunctionDef>();
  /** Functions being walked (a call to one of them again is recursion). */
  const active = new Set<string>();
  walkAll(tree.rootNode, (n) => {
    if (n.type !== "function_statement") return;
    const name = named(n).find((c) => c.type === "function_name")!.text;
    const decl = named(n).find((c) => c.type === "function_parameter_declaration");
    const params = decl ? paramNames(decl) : [];
    const body = named(n).find((c) => c.type === "script_block")!;
    const block = named(body).find((c) => c.type === "param_block");
    functions.set(name.toLowerCase(), { params: block ? paramNames(block) : params, body });
  });

  function paramNames(n: Node): string[] {
    const out: string[] = [];
    walkAll(n, (c) => {
      if (c.type === "script_parameter") {
        const v = named(c).find((x) => x.type === "variable");
        if (v) out.push(v.text.slice(1).toLowerCase());
      }
    });
    return out;
  }

  let depth = 0;

  const varName = (n: Node) => n.text.replace(/^\$/, "").replace(/^\{|\}$/g, "").toLowerCase();

  function evalNode(node: Node, env: Env, input?: Value): Value {
    const n = unwrap(node);
    switch (n.type) {
      case "string_literal": {
        const lit = named(n)[0];
        if (lit?.type === "verbatim_string_characters") return { strings: new Set([lit.text.slice(1, -1).replace(/''/g, "'")]) };
        let v: Value = NONE;
        for (const c of named(lit ?? n)) v = union(v, evalNode(c, env, input));
        return { tainted: v.tainted };
      }
      case "sub_expression":
      case "array_expression":
      case "statement_block":
      case "script_block_body": {
        const list = named(n).find((c) => c.type === "statement_list");
        return list ? walkStatements(list, env, input) : NONE;
      }
      case "generic_token":
        // a bareword command argument (-ClassName MSFT_Disk): a constant string
        return { strings: new Set([n.text]) };
      case "integer_literal":
      case "real_literal":
        return NONE;
      case "variable": {
        const name = varName(n);
        if (name === "_" || name === "psitem") return input ?? NONE;
        if (name === "null" || name === "true" || name === "false") return NONE;
        return env.get(name) ?? NONE;
      }
      case "member_access": {
        const kids = named(n);
        const base = evalNode(kids[0], env, input);
        const member = kids.find((c) => c.type === "member_name")?.text ?? "";
        checkProperty(n, base, member);
        return { tainted: base.tainted };
      }
      case "element_access": {
        const kids = named(n);
        const base = evalNode(kids[0], env, input);
        for (const k of kids.slice(1)) evalNode(k, env, input);
        if (kids[0].type === "variable" && varName(kids[0]) === "ops") return { opsBlock: true };
        return { cls: base.cls, tainted: base.tainted, keys: base.keys };
      }
      case "cast_expression": {
        const kids = named(n);
        const type = kids[0].text.replace(/^\[|\]$/g, "").toLowerCase();
        const v = evalNode(kids[kids.length - 1], env, input);
        return NUMERIC_TYPES.has(type) ? NONE : { tainted: v.tainted, strings: v.strings };
      }
      case "invokation_expression":
        return evalInvocation(n, env, input);
      case "hash_literal_expression": {
        const keys = new Set<string>();
        let tainted = false;
        for (const entry of named(n).flatMap((b) => (b.type === "hash_literal_body" ? named(b) : []))) {
          const [key, value] = named(entry);
          const kv = unwrap(key);
          keys.add(kv.type === "string_literal" ? kv.text.slice(1, -1) : kv.text);
          if (value) tainted = evalNode(value, env, input).tainted || tainted;
        }
        return { keys, tainted };
      }
      case "script_block_expression":
        return { block: n };
      case "comparison_expression": {
        const kids = named(n);
        const op = kids.find((c) => c.type === "comparison_operator");
        const operands = kids.filter((c) => c.type !== "comparison_operator").map((c) => evalNode(c, env, input));
        if (op && PATTERN_OPERATORS.test(op.text) && operands.some((v) => v.tainted)) violation("PS4", n, `${op.text} with request data`);
        return op && /^-(eq|ne|gt|ge|lt|le|contains|notcontains|in|notin|is|isnot)$/i.test(op.text) ? NONE : union(operands[0], operands[1]);
      }
      case "command":
        return evalCommand(n, env, input);
      default: {
        // binary arithmetic/format/logical expressions, arrays: union of the parts
        let v: Value = NONE;
        for (const c of named(n)) if (c.type !== "comparison_operator" && c.type !== "assignement_operator") v = union(v, evalNode(c, env, input));
        if (n.type === "format_expression" || n.type === "additive_expression" || n.type === "logical_expression" || n.type === "bitwise_expression") return { tainted: v.tainted };
        return v;
      }
    }
  }

  function checkProperty(n: Node, base: Value, member: string): void {
    for (const cls of base.cls ?? []) {
      a.properties.add(`${cls}.${member}`);
      const sig = CIM_CLASSES[cls];
      if (!sig) continue; // reported where the class was named
      if (CIM_INSTANCE_MEMBERS.has(member) || ARRAY_MEMBERS.has(member)) continue;
      if (!(member in sig.properties)) violation("SIG", n, `${cls} has no property ${member} in the signature table`);
    }
  }

  function evalInvocation(n: Node, env: Env, input?: Value): Value {
    const kids = named(n);
    const target = kids[0];
    const member = kids.find((c) => c.type === "member_name")?.text ?? "";
    const argList = kids.find((c) => c.type === "argument_list");
    const args = argList ? named(argList).flatMap((l) => (l.type === "argument_expression_list" ? named(l) : [l])).map((x) => evalNode(x, env, input)) : [];
    if (target.type === "type_literal") {
      const type = target.text.replace(/^\[|\]$/g, "").toLowerCase();
      if ((type === "regex" || type === "system.text.regularexpressions.regex" || type === "wildcardpattern" || type === "management.automation.wildcardpattern") && args.slice(1, 2).some((v) => v.tainted)) {
        violation("PS4", n, `[${type}]::${member} with a pattern from request data`);
      }
      if (type === "wildcardpattern" && args.some((v) => v.tainted)) violation("PS4", n, "a WildcardPattern from request data");
      return { tainted: args.some((v) => v.tainted) };
    }
    const base = evalNode(target, env, input);
    return { tainted: base.tainted || args.some((v) => v.tainted) };
  }

  /** Runs the statements of a block; returns the value of the last one (a function's result). */
  function walkStatements(list: Node, env: Env, input?: Value): Value {
    let last: Value = NONE;
    for (const st of named(list)) {
      const v = walkStatement(st, env, input);
      if (v !== undefined) last = v;
    }
    return last;
  }

  function walkStatement(st: Node, env: Env, input?: Value): Value | undefined {
    switch (st.type) {
      case "function_statement":
      case "empty_statement":
      case "comment":
        return undefined;
      case "if_statement":
      case "elseif_clause":
      case "else_clause": {
        let result: Value | undefined;
        const before = env.snapshot();
        for (const c of named(st)) {
          if (c.type === "statement_block" || c.type === "elseif_clause" || c.type === "else_clause" || c.type === "elseif_clauses") {
            const branch = new Env(env.parent);
            for (const [k, v] of before) branch.set(k, v);
            const v = c.type === "statement_block" ? walkStatements(named(c).find((x) => x.type === "statement_list") ?? c, branch, input) : walkStatement(c, branch, input);
            result = union(result, v);
            for (const [k, v2] of branch.vars) env.set(k, union(env.vars.get(k), v2));
          } else evalNode(c, env, input);
        }
        return result;
      }
      case "foreach_statement": {
        const kids = named(st);
        const variable = kids.find((c) => c.type === "variable")!;
        const collection = kids.find((c) => c !== variable && c.type !== "statement_block")!;
        env.set(varName(variable), evalNode(collection, env, input));
        const body = kids.find((c) => c.type === "statement_block");
        return body ? evalNode(body, env, input) : undefined;
      }
      case "try_statement":
      case "catch_clauses":
      case "catch_clause":
      case "finally_clause": {
        let v: Value | undefined;
        for (const c of named(st)) v = union(v, c.type === "statement_block" ? evalNode(c, env, input) : walkStatement(c, env, input));
        return v;
      }
      case "flow_control_statement": {
        let v: Value = NONE;
        for (const c of named(st)) v = union(v, evalNode(c, env, input));
        return /^return/i.test(st.text) ? v : undefined;
      }
      case "while_statement":
      case "do_statement":
      case "for_statement": {
        let v: Value | undefined;
        for (const c of named(st)) v = c.type === "statement_block" ? evalNode(c, env, input) : (evalNode(c, env, input), v);
        return v;
      }
      default:
        return evalPipeline(st, env, input);
    }
  }

  function evalPipeline(st: Node, env: Env, input?: Value): Value {
    const n = unwrap(st);
    if (n.type === "assignment_expression") return evalAssignment(n, env, input);
    if (n.type === "pipeline_chain" || n.type === "pipeline") {
      let value: Value | undefined = input;
      let first = true;
      for (const stage of named(n)) {
        const s = unwrap(stage);
        value = s.type === "command" ? evalCommand(s, env, first ? input : value, !first) : evalNode(s, env, input);
        first = false;
      }
      return value ?? NONE;
    }
    if (n.type === "command") return evalCommand(n, env, input);
    return evalNode(n, env, input);
  }

  function evalAssignment(n: Node, env: Env, input?: Value): Value {
    const kids = named(n);
    const left = unwrap(kids[0]);
    const right = kids[kids.length - 1];
    const v = right.type === "pipeline" || right.type === "assignment_expression" ? evalPipeline(right, env, input) : evalNode(right, env, input);
    if (left.type === "variable") {
      const name = varName(left);
      if (name !== "null") env.set(name, v);
    } else if (left.type === "member_access") {
      // $p.Key = …: a key added to a hashtable
      const base = unwrap(named(left)[0]);
      const member = named(left).find((c) => c.type === "member_name")?.text ?? "";
      if (base.type === "variable") {
        const name = varName(base);
        const old = env.get(name) ?? NONE;
        env.set(name, { ...old, keys: new Set([...(old.keys ?? []), member]), tainted: old.tainted || v.tainted });
      }
    } else if (left.type === "element_access") {
      const base = unwrap(named(left)[0]);
      const key = named(left)[1] ? unwrap(named(left)[1]) : undefined;
      if (base.type === "variable" && key?.type === "string_literal") {
        const name = varName(base);
        const old = env.get(name) ?? NONE;
        env.set(name, { ...old, keys: new Set([...(old.keys ?? []), key.text.slice(1, -1)]) });
      }
    }
    return NONE;
  }

  interface Element {
    param?: string;
    paramNode?: Node;
    arg?: Node;
  }

  function elementsOf(cmd: Node, switches: Set<string>): Element[] {
    const list = named(cmd).find((c) => c.type === "command_elements");
    const out: Element[] = [];
    if (!list) return out;
    const kids = named(list).filter((c) => c.type !== "command_argument_sep");
    for (let i = 0; i < kids.length; i++) {
      const k = kids[i];
      if (k.type === "command_parameter") {
        const colon = k.text.endsWith(":") || script[k.endIndex] === ":";
        const param = k.text.replace(/^-/, "").replace(/:$/, "");
        if (colon || !switches.has(param.toLowerCase())) {
          const next = kids[i + 1];
          if (next && next.type !== "command_parameter") {
            out.push({ param, paramNode: k, arg: next });
            i++;
            continue;
          }
        }
        out.push({ param, paramNode: k });
      } else out.push({ arg: k });
    }
    return out;
  }

  function evalCommand(cmd: Node, env: Env, input?: Value, piped = false): Value {
    const kids = named(cmd);
    if (kids.some((c) => c.type === "command_invokation_operator")) {
      const target = kids.find((c) => c.type === "command_name_expr");
      const tv = target ? evalNode(named(target)[0] ?? target, env, input) : NONE;
      const tnode = target ? unwrap(named(target)[0] ?? target) : cmd;
      const path = tnode.type === "path_command_name" ? named(tnode)[0] : tnode;
      const resolved = path && path.type === "variable" ? (env.get(varName(path)) ?? tv) : tv;
      if (!resolved.opsBlock) violation("PS2", cmd, "invocation operator on something other than a script block of $ops");
      for (const e of elementsOf(cmd, new Set())) if (e.arg) evalNode(e.arg, env, input);
      return NONE;
    }
    const nameNode = kids.find((c) => c.type === "command_name");
    const name = nameNode?.text ?? "";
    const lower = name.toLowerCase();
    if (DYNAMIC_CODE.has(lower)) {
      violation("PS2", cmd, `dynamic code (${name})`);
      return NONE;
    }
    const fn = functions.get(lower);
    if (fn) {
      const elements = elementsOf(cmd, new Set());
      const fenv = new Env(globalEnv);
      let i = 0;
      let argsTainted = false;
      for (const e of elements) {
        if (e.param) {
          violation("SIG", e.paramNode!, `-${e.param}: the script's functions take positional arguments only`);
          continue;
        }
        const v = evalNode(e.arg!, env, input);
        argsTainted ||= v.tainted === true;
        if (i < fn.params.length) fenv.set(fn.params[i], v);
        else violation("SIG", e.arg!, `${name} takes ${fn.params.length} argument(s)`);
        i++;
      }
      // A recursive call (FromJson over nested JSON) is walked once: its result is its arguments' data.
      if (active.has(lower)) return { ...NONE, tainted: argsTainted };
      if (depth > 20) return NONE;
      depth++;
      active.add(lower);
      try {
        return evalNode(named(fn.body).find((c) => c.type === "script_block_body") ?? fn.body, fenv, input);
      } finally {
        depth--;
        active.delete(lower);
      }
    }
    const sig = Object.entries(CMDLETS).find(([k]) => k.toLowerCase() === lower);
    if (!sig) {
      violation("SIG", cmd, `command ${name} is neither one of the script's functions nor in the signature table`);
      for (const e of elementsOf(cmd, new Set())) if (e.arg) evalNode(e.arg, env, input);
      return NONE;
    }
    const [cmdlet, s] = sig;
    const used = a.cmdlets.get(cmdlet) ?? new Set<string>();
    a.cmdlets.set(cmdlet, used);
    const switches = new Set((s.switches ?? []).map((x) => x.toLowerCase()));
    const elements = elementsOf(cmd, switches);
    const all = new Map<string, string>();
    for (const set of Object.values(s.parameterSets)) for (const p of set) all.set(p.toLowerCase(), p);
    for (const p of COMMON_PARAMETERS) all.set(p.toLowerCase(), p);
    const bound = new Map<string, { node: Node; value?: Value; argNode?: Node }>();
    const positional: { node: Node; value: Value }[] = [];
    for (const e of elements) {
      const value = e.arg ? (unwrap(e.arg).type === "script_block_expression" ? { block: unwrap(e.arg) } : evalNode(e.arg, env, input)) : undefined;
      if (e.param) {
        const canonical = all.get(e.param.toLowerCase());
        if (!canonical) {
          violation("SIG", e.paramNode!, `${cmdlet} has no parameter -${e.param} in the signature table`);
          continue;
        }
        if (canonical !== e.param) violation("SIG", e.paramNode!, `-${e.param}: spell it -${canonical} as documented`);
        bound.set(canonical, { node: e.paramNode!, value, argNode: e.arg });
        used.add(canonical);
      } else positional.push({ node: e.arg!, value: value! });
    }
    // one parameter set must hold every named parameter, and its positions the positional arguments
    const fits = Object.entries(s.parameterSets).filter(([set, params]) => {
      if (![...bound.keys()].every((p) => params.includes(p) || (COMMON_PARAMETERS as readonly string[]).includes(p))) return false;
      const free = (s.positional?.[set] ?? []).filter((p) => !bound.has(p));
      return positional.length <= free.length;
    });
    if (fits.length === 0) violation("SIG", cmd, `${cmdlet}: no documented parameter set takes ${[...bound.keys()].map((p) => "-" + p).join(" ")}${positional.length ? ` and ${positional.length} positional argument(s)` : ""}`);
    else {
      const free = (s.positional?.[fits[0][0]] ?? []).filter((p) => !bound.has(p));
      positional.forEach((p, i) => {
        bound.set(free[i], { node: p.node, value: p.value, argNode: p.node });
        used.add(free[i]);
      });
    }
    for (const [param, b] of bound) {
      if ((s.wildcards ?? []).includes(param) && b.value?.tainted) violation("PS4", b.node, `request data reaches wildcard-capable ${cmdlet} -${param}`);
      if (IDENTIFIER_PARAMETERS.has(param) && (b.value?.tainted || !b.value?.strings || b.value.strings.size === 0)) violation("PS5", b.node, `${cmdlet} -${param} must be a constant string`);
      if (CONSTANT_TEXT_PARAMETERS.has(param) && (!b.argNode || unwrap(b.argNode).type !== "string_literal" || named(unwrap(b.argNode))[0]?.type !== "verbatim_string_characters")) {
        violation("PS3", b.node, `${cmdlet} -${param} must be a constant single-quoted string`);
      }
    }
    const str = (p: string) => [...(bound.get(p)?.value?.strings ?? [])];
    switch (cmdlet) {
      case "Get-CimInstance": {
        for (const cls of str("ClassName")) checkClass(cmd, cls, str("Namespace"));
        return { cls: new Set(str("ClassName")) };
      }
      case "Get-CimAssociatedInstance": {
        const from = bound.get("InputObject")?.value ?? input ?? NONE;
        const to = str("ResultClassName");
        for (const cls of to) checkClass(cmd, cls, []);
        const assoc = str("Association");
        for (const f of from.cls ?? []) {
          for (const t of to) {
            const links = Object.entries(CIM_ASSOCIATIONS).filter(([, x]) => (x.ends[0] === f && x.ends[1] === t) || (x.ends[0] === t && x.ends[1] === f));
            if (links.length === 0) violation("SIG", cmd, `no association between ${f} and ${t} in the signature table`);
            for (const name of assoc) if (!links.some(([k]) => k === name)) violation("SIG", cmd, `${name} does not associate ${f} with ${t}`);
          }
        }
        for (const name of assoc) if (!CIM_ASSOCIATIONS[name]) violation("SIG", cmd, `association ${name} is not in the signature table`);
        return { cls: new Set(to) };
      }
      case "Get-SmbGlobalMapping":
        return { cls: new Set(["MSFT_SmbGlobalMapping"]) };
      case "Invoke-CimMethod": {
        const methods = str("MethodName");
        const isStatic = bound.has("ClassName");
        const classes = isStatic ? str("ClassName") : [...(bound.get("InputObject")?.value?.cls ?? [])];
        if (!isStatic && classes.length === 0) violation("SIG", cmd, "Invoke-CimMethod on an instance of unknown class");
        const argsValue = bound.get("Arguments")?.value;
        const args = [...(argsValue?.keys ?? [])];
        for (const cls of classes) {
          if (isStatic) checkClass(cmd, cls, str("Namespace"));
          const csig = CIM_CLASSES[cls];
          for (const method of methods) {
            a.cimCalls.push({ cls, method, isStatic, args, op: currentOp });
            const msig = csig?.methods[method];
            if (!csig) continue;
            if (!msig) {
              violation("SIG", cmd, `${cls} has no method ${method} in the signature table`);
              continue;
            }
            if (msig.static !== isStatic) violation("SIG", cmd, `${cls}.${method} is ${msig.static ? "static" : "an instance method"}`);
            for (const arg of args) if (!(arg in msig.in)) violation("SIG", cmd, `${cls}.${method} has no parameter ${arg} in the signature table`);
          }
        }
        return NONE;
      }
      case "Where-Object":
      case "ForEach-Object": {
        const block = bound.get(cmdlet === "Where-Object" ? "FilterScript" : "Process")?.value?.block;
        const item = piped ? input : bound.get("InputObject")?.value;
        const result = block ? evalNode(named(block).find((c) => c.type === "script_block") ?? block, new Env(env), item) : NONE;
        return cmdlet === "Where-Object" ? (item ?? NONE) : result;
      }
      default:
        return NONE;
    }
  }

  function checkClass(n: Node, cls: string, namespaces: string[]): void {
    const sig = CIM_CLASSES[cls];
    if (!sig) {
      violation("SIG", n, `CIM class ${cls} is not in the signature table`);
      return;
    }
    for (const ns of namespaces) if (ns.toLowerCase() !== sig.namespace.toLowerCase()) violation("SIG", n, `${cls} lives in ${sig.namespace}, not ${ns}`);
  }

  // top level: globals, then every op with param($a) bound to request data
  const globalEnv = new Env();
  const program = named(tree.rootNode).find((c) => c.type === "statement_list") ?? tree.rootNode;
  const opsTables: Node[] = [];
  for (const st of named(program)) {
    const n = unwrap(st);
    if (n.type === "assignment_expression" && unwrap(named(n)[0]).text.toLowerCase() === "$ops") {
      opsTables.push(n);
      continue;
    }
    if (n.type === "while_statement") {
      // the request loop: $line comes from stdin
      globalEnv.set("line", { tainted: true });
      globalEnv.set("req", { tainted: true });
    }
    walkStatement(st, globalEnv);
  }
  if (opsTables.length !== 1) a.violations.push(`SIG: expected one $ops table, found ${opsTables.length}`);
  for (const table of opsTables) {
    const hash = (() => {
      let h: Node | undefined;
      walkAll(named(table)[named(table).length - 1], (c) => {
        if (!h && c.type === "hash_literal_expression") h = c;
      });
      return h;
    })();
    for (const entry of hash ? named(hash).flatMap((b) => (b.type === "hash_literal_body" ? named(b) : [])) : []) {
      const [key, value] = named(entry);
      const k = unwrap(key);
      const op = k.type === "string_literal" ? k.text.slice(1, -1) : k.text;
      a.ops.push(op);
      currentOp = op;
      const block = unwrap(value);
      if (block.type !== "script_block_expression") {
        violation("SIG", block, `op ${op} is not a script block`);
        continue;
      }
      const env = new Env(globalEnv);
      const params = named(block).find((c) => c.type === "param_block");
      for (const p of params ? paramNames(params) : []) env.set(p, { tainted: true });
      evalNode(named(block).find((c) => c.type === "script_block") ?? block, env);
    }
  }
  return a;
}
