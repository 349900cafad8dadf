/**
 * The Win32 layout and prototype check: every function csi-proxy declares through koffi
 * and every structure it passes, compared with MinGW-w64's windows.h.
 *
 * - The declarations are not listed here: they are recorded by running the binding modules
 *   ({@link BINDING_MODULES}: one per DLL) over a koffi whose `load(dll).func(proto)` records the
 *   prototype, each with the kind the module gives it. A new declaration in those files is covered
 *   without touching this file; a new binding module is added to the list.
 * - {@link cppSource} turns them into a C++ program for x86_64-w64-mingw32-g++:
 *   * per function, static_asserts that the parameter count, each parameter and the return type of
 *     the windows.h prototype (`decltype(&Function)`) match what the koffi prototype implies
 *     (integer width and signedness, pointer, pointee size, callback prototypes recursively), so a
 *     mismatch fails to compile, naming the function and parameter;
 *   * a main() printing, as JSON, the size and each field's offset and size of every structure of
 *     WIN32_STRUCTS and of the hand-read layouts (SCM_LAYOUT, DEVICE_ID_LAYOUT), and the value of
 *     every exported constant with a windows.h name (win32-constants.ts's exports, WinError as
 *     ERROR_*), which the test compares with koffi's view (koffi.sizeof/offsetof) and our values.
 */
import koffi from "koffi";
import * as win32Constants from "../../src/win32/win32-constants.ts";
import type { DeclKind } from "../../src/win32/binding.ts";
import { advapi32 } from "../../src/win32/advapi32.ts";
import { kernel32 } from "../../src/win32/kernel32.ts";
import { WIN32_STRUCTS, win32Types } from "../../src/win32/win32-structs.ts";
import { WinError } from "../../src/win32/win32-errors.ts";
import { SCM_LAYOUT } from "../../src/win32-service/scm.ts";
import { DEVICE_ID_LAYOUT } from "../../src/host/windows/powershell/cim-output.ts";

/** koffi's description of a type (koffi.type()). */
export interface KType {
  name: string;
  primitive: string;
  size: number;
  ref?: KType;
  members?: Record<string, { name: string; type: KType; offset: number }>;
  proto?: { name: string; arguments: { type: KType; direction: string }[]; result: KType };
}

export interface Declaration {
  /** The source file that declares it. */
  owner: string;
  dll: string;
  name: string;
  proto: string;
  type: NonNullable<KType["proto"]>;
  /** The kind its binding module gives it (binding.ts). */
  kind?: DeclKind;
}

/** The binding modules (one per DLL): every koffi function declaration of src/win32 is made in one of them. */
export const BINDING_MODULES: Record<string, (k: typeof koffi) => Record<string, unknown>> = {
  "src/win32/kernel32.ts": (k) => kernel32(k as never),
  "src/win32/advapi32.ts": (k) => advapi32(k as never),
};

/** Every koffi declaration of src/win32 (recorded, see the module comment), and the koffi types of WIN32_STRUCTS. */
export function collectDeclarations(): { decls: Declaration[]; structs: Record<string, KType> } {
  const decls: Declaration[] = [];
  let owner = "";
  let seq = 0;
  const recorder = new Proxy(koffi, {
    get(target, prop) {
      if (prop === "load") {
        return (dll: string) => ({
          func(proto: string) {
            const m = /(\w+)\s*\(/.exec(proto);
            if (!m) throw new Error(`unparsable prototype ${proto}`);
            // a unique name: koffi registers prototypes by name, and several files declare GetLastError
            const renamed = proto.slice(0, m.index) + `csiproxy_check_${++seq}_${m[1]}` + proto.slice(m.index + m[1].length);
            const type = (koffi.type(koffi.proto(renamed)) as unknown as KType).proto!;
            decls.push({ owner, dll, name: m[1], proto, type });
            const fn = () => {
              throw new Error("recorded declaration: not callable");
            };
            return Object.assign(fn, { async: fn });
          },
        });
      }
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  }) as typeof koffi;
  for (const [file, bind] of Object.entries(BINDING_MODULES)) {
    owner = file;
    const first = decls.length;
    const table = bind(recorder);
    // the table's functions, in declaration order (one entry per `func`)
    const declared = Object.values(table).filter((v): v is { kind: DeclKind; fnName: string } => typeof v === "function" && "kind" in v);
    const mine = decls.slice(first);
    if (declared.length !== mine.length || declared.some((v, i) => v.fnName !== mine[i].name)) throw new Error(`${file}: its table does not list each declaration once, in order`);
    mine.forEach((d, i) => (d.kind = declared[i].kind));
  }
  const types = win32Types(recorder as never);
  const structs: Record<string, KType> = {};
  for (const name of Object.keys(WIN32_STRUCTS)) structs[name] = koffi.type(types[name] as never) as unknown as KType;
  return { decls, structs };
}

/** The hand-read layouts: `<object>.<struct>.<field|sizeof>` → our number. */
export function handLayouts(): Record<string, { struct: string; field: string; value: number }> {
  const out: Record<string, { struct: string; field: string; value: number }> = {};
  for (const [obj, layout] of Object.entries({ SCM_LAYOUT, DEVICE_ID_LAYOUT } as Record<string, Record<string, Record<string, number>>>)) {
    for (const [struct, fields] of Object.entries(layout)) for (const [field, value] of Object.entries(fields)) out[`${obj}.${struct}.${field}`] = { struct, field, value };
  }
  return out;
}

/** The constants with windows.h names: win32-constants.ts's UPPER_CASE numeric exports and WinError (as ERROR_*). */
export function constants(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(win32Constants)) if (/^[A-Z][A-Z0-9_]+$/.test(name) && typeof value === "number") out[name] = value;
  for (const [name, value] of Object.entries(WinError)) out[`ERROR_${name}`] = value;
  return out;
}

/** Our own exported numbers that are not windows.h names (none today; a name here is not checked). */
export const OWN_CONSTANTS = new Set<string>([]);

/** Constants that stand for a windows.h enum value (not a macro): our name → the enum member. */
export const ENUM_CONSTANTS: Record<string, string> = {
  FILE_DISPOSITION_INFO_CLASS: "FileDispositionInfo",
  FILE_ID_BOTH_DIRECTORY_INFO_CLASS: "FileIdBothDirectoryInfo",
  FILE_ID_BOTH_DIRECTORY_RESTART_INFO_CLASS: "FileIdBothDirectoryRestartInfo",
  SE_FILE_OBJECT: "SE_FILE_OBJECT",
  SE_KERNEL_OBJECT: "SE_KERNEL_OBJECT",
  TOKEN_USER_CLASS: "TokenUser",
  STORAGE_DEVICE_ID_PROPERTY: "StorageDeviceIdProperty",
};

const INTEGERS: Record<string, [number, boolean]> = {
  Int8: [1, true],
  UInt8: [1, false],
  Int16: [2, true],
  UInt16: [2, false],
  Int32: [4, true],
  UInt32: [4, false],
  Int64: [8, true],
  UInt64: [8, false],
  Bool: [1, false],
  Char16: [2, false],
};

/**
 * A C++ constant expression that is true when the windows.h type `c` (a C++ type expression) can
 * take what koffi passes for `t`; `structs` are our records (WIN32_STRUCTS) by name.
 */
function matches(t: KType, c: string, structs: Record<string, KType>): string {
  const int = INTEGERS[t.primitive];
  if (t.primitive === "Void") return `std::is_void<${c}>::value`;
  if (int) {
    const [size, signed] = int;
    // intptr_t stands for a HANDLE (void *): the same register and width on x64
    const handle = size === 8 ? ` || isPtr<${c}>()` : "";
    return `(isInt<${c}>(${size}, ${signed ? 1 : 0})${handle})`;
  }
  if (t.primitive === "String16") return `(isPtr<${c}>() && pointee<${c}>() == 2)`;
  if (t.primitive === "String") return `(isPtr<${c}>() && pointee<${c}>() == 1)`;
  if (t.primitive === "Callback") return `(isFnPtr<${c}>() && ${protoMatches(t.proto!, c, structs)})`;
  if (t.primitive === "Pointer") {
    const ref = t.ref!;
    if (ref.primitive === "Void" || ref.primitive === "UInt8" || ref.primitive === "Int8") return `isPtr<${c}>()`; // untyped memory or a byte buffer holding a structure
    if (ref.primitive === "Record") {
      const members = Object.values(ref.members ?? {});
      // a record of N identical windows.h records (e.g. a SERVICE_TABLE_ENTRYW table with its NULL entry) passes a pointer to the first
      const element = !structs[ref.name] && members.length > 0 && members.every((m) => m.type.name === members[0].type.name && structs[m.type.name]) ? members[0].type : ref;
      return `(isPtr<${c}>() && pointee<${c}>() == ${element.size})`;
    }
    return `(isPtr<${c}>() && pointee<${c}>() == ${ref.size})`;
  }
  throw new Error(`no rule for koffi type ${t.name} (${t.primitive})`);
}

function protoMatches(p: NonNullable<KType["proto"]>, fnType: string, structs: Record<string, KType>): string {
  const parts = [`Sig<${fnType}>::N == ${p.arguments.length}`, matches(p.result, `typename Sig<${fnType}>::Ret`, structs)];
  p.arguments.forEach((a, i) => parts.push(matches(a.type, `Arg<${fnType}, ${i}>`, structs)));
  return parts.join(" && ");
}

const PRELUDE = String.raw`// Generated by test/windows/win32-check.ts from csi-proxy's koffi declarations. Do not edit.
#include <windows.h>
#include <winioctl.h>
#include <aclapi.h>
#include <sddl.h>
#include <cstddef>
#include <cstdio>
#include <tuple>
#include <type_traits>

template <class F> struct Sig;
template <class R, class... A> struct Sig<R (*)(A...)> {
  using Ret = R;
  using Args = std::tuple<A...>;
  static constexpr std::size_t N = sizeof...(A);
};
template <class F, std::size_t I> using Arg = typename std::tuple_element<(I < Sig<F>::N ? I : 0), typename Sig<F>::Args>::type;
template <class T, bool = std::is_enum<T>::value> struct Num { using type = T; };
template <class T> struct Num<T, true> { using type = typename std::underlying_type<T>::type; };
// an integer (or enum: its signedness is the compiler's choice, so only the width counts) of this width and signedness
template <class T> constexpr bool isInt(std::size_t size, int isSigned) {
  return (std::is_integral<typename Num<T>::type>::value && sizeof(T) == size && (std::is_enum<T>::value || std::is_signed<T>::value == (isSigned == 1)));
}
template <class T> constexpr bool isPtr() { return std::is_pointer<T>::value; }
template <class T> constexpr bool isFnPtr() { return std::is_pointer<T>::value && std::is_function<typename std::remove_pointer<T>::type>::value; }
template <class T> constexpr std::size_t pointee() {
  using P = typename std::remove_cv<typename std::remove_pointer<T>::type>::type;
  return sizeof(typename std::conditional<std::is_void<P>::value || std::is_function<P>::value, char, P>::type) * !(std::is_void<P>::value || std::is_function<P>::value);
}
`;

const cstr = (s: string) => JSON.stringify(s);

/** The C++ source: prototype static_asserts, then main() printing layouts and constants as JSON. */
export function cppSource(decls: Declaration[], structs: Record<string, KType>): string {
  const lines = [PRELUDE];
  for (const d of decls) {
    const f = `decltype(&${d.name})`;
    lines.push(`// ${d.owner}: ${d.proto}`);
    lines.push(`static_assert(Sig<${f}>::N == ${d.type.arguments.length}, ${cstr(`${d.name} (${d.owner}): koffi declares ${d.type.arguments.length} parameter(s), windows.h has another count`)});`);
    lines.push(`static_assert(${matches(d.type.result, `typename Sig<${f}>::Ret`, structs)}, ${cstr(`${d.name} (${d.owner}): return type ${d.type.result.name} does not match windows.h`)});`);
    d.type.arguments.forEach((a, i) => {
      lines.push(`static_assert(${matches(a.type, `Arg<${f}, ${i}>`, structs)}, ${cstr(`${d.name} (${d.owner}): parameter ${i + 1} (${a.type.name}) does not match windows.h`)});`);
    });
  }
  lines.push("", "int main() {", '  std::printf("{\\"structs\\":{");');
  Object.entries(structs).forEach(([name, t], i) => {
    lines.push(`  std::printf("%s\\"${name}\\":{\\"size\\":%u,\\"fields\\":{", ${i ? '","' : '""'}, (unsigned)sizeof(${name}));`);
    Object.keys(t.members ?? {}).forEach((field, j) => {
      lines.push(`  std::printf("%s\\"${field}\\":[%u,%u]", ${j ? '","' : '""'}, (unsigned)offsetof(${name}, ${field}), (unsigned)sizeof(((${name} *)0)->${field}));`);
    });
    lines.push('  std::printf("}}");');
  });
  lines.push('  std::printf("},\\"hand\\":{");');
  Object.entries(handLayouts()).forEach(([key, h], i) => {
    const expr = h.field === "sizeof" ? `sizeof(${h.struct})` : `offsetof(${h.struct}, ${h.field})`;
    lines.push(`  std::printf("%s\\"${key}\\":%u", ${i ? '","' : '""'}, (unsigned)${expr});`);
  });
  lines.push('  std::printf("},\\"constants\\":{");');
  Object.keys(constants())
    .filter((n) => !OWN_CONSTANTS.has(n))
    .forEach((name, i) => {
      const member = ENUM_CONSTANTS[name];
      if (member) return void lines.push(`  std::printf("%s\\"${name}\\":%llu", ${i ? '","' : '""'}, (unsigned long long)(unsigned long)(${member}));`);
      lines.push(`#ifdef ${name}`, `  std::printf("%s\\"${name}\\":%llu", ${i ? '","' : '""'}, (unsigned long long)(unsigned long)(${name}));`, "#else", `  std::printf("%s\\"${name}\\":null", ${i ? '","' : '""'});`, "#endif");
    });
  lines.push('  std::printf("}}\\n");', "  return 0;", "}", "");
  return lines.join("\n");
}
