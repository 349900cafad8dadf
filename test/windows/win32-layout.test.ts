/**
 * Win32 prototypes and layouts against MinGW-w64's windows.h (see win32-check.ts):
 * every koffi declaration of src/win32 must compile against the real prototype, and every
 * structure, hand-read offset and constant must equal what windows.h says (read back by running the
 * generated program under Wine). Also: every Win32 declaration is `io` (off the JS thread) unless it
 * is listed below as unable to block.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import koffi from "koffi";
import { collectDeclarations, cppSource, constants, handLayouts, OWN_CONSTANTS, type KType } from "./win32-check.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const out = path.join(root, ".cache", "win32-check");
const CXX = "x86_64-w64-mingw32-g++";

/** Win32 declarations that may run on the JS thread, and why they cannot block. */
const MEMORY_ONLY: Record<string, string> = {
  GetLastError: "reads the thread's last error",
  LocalFree: "frees memory",
  ConvertStringSecurityDescriptorToSecurityDescriptorW: "parses SDDL in memory",
  ConvertSecurityDescriptorToStringSecurityDescriptorW: "formats SDDL in memory",
  GetSecurityDescriptorDacl: "reads a security descriptor in memory",
  GetSecurityDescriptorOwner: "reads a security descriptor in memory",
  ConvertSidToStringSidW: "formats a SID in memory",
  ConvertStringSidToSidW: "parses a SID in memory",
  SetSecurityInfo: "on csi-proxy's own pipe handle (a local kernel object)",
  GetSecurityInfo: "on csi-proxy's own pipe handle (a local kernel object)",
  GetCurrentProcess: "returns a pseudo-handle",
  OpenProcessToken: "opens the process's own token",
  GetTokenInformation: "reads the process's own token",
};

/**
 * Win32 declarations of kind `local`: a metadata query of a path, on the JS thread, called only by
 * host/windows/local-lookup.ts under its bounds (fixed local drives, never past a reparse point, paused
 * after a slow answer).
 */
const LOCAL_METADATA: Record<string, string> = {
  GetFileAttributesExW: "attributes of one path component on a fixed local drive (local-lookup.ts)",
};

const { decls, structs } = collectDeclarations();

test("every Win32 declaration that may block (a path, a file or device handle, a name lookup) runs off the JS thread", () => {
  const win32 = decls.filter((d) => d.owner === "src/win32/win32.ts");
  assert.ok(win32.length >= 25, `declarations recorded: ${win32.length}`);
  const wrong = win32
    .filter((d) => d.kind !== "io" && !(d.kind === "mem" && d.name in MEMORY_ONLY) && !(d.kind === "local" && d.name in LOCAL_METADATA))
    .map((d) => `${d.name}: declared ${d.kind ?? "?"}; declare it io, or list it in MEMORY_ONLY (mem) or LOCAL_METADATA (local) with the reason`);
  assert.deepEqual(wrong, []);
  for (const name of ["GetFileAttributesW", "FindFirstFileW", "CreateFileW", "DeviceIoControl", "SetVolumeMountPointW", "GetVolumeNameForVolumeMountPointW", "CreateSymbolicLinkW"]) {
    assert.equal(win32.find((d) => d.name === name)?.kind, "io", name);
  }
});

/** koffi's view of the structures: size, and [offset, size] per field. */
function koffiView(): Record<string, { size: number; fields: Record<string, [number, number]> }> {
  const view: Record<string, { size: number; fields: Record<string, [number, number]> }> = {};
  for (const [name, t] of Object.entries(structs)) {
    const fields: Record<string, [number, number]> = {};
    for (const [f, m] of Object.entries(t.members ?? {})) fields[f] = [m.offset, (m.type as KType).size];
    view[name] = { size: t.size, fields };
  }
  return view;
}

function haveCompiler(): string | false {
  return spawnSync(CXX, ["--version"], { stdio: "ignore" }).status === 0 ? false : `${CXX} is not installed (scripts/install-test-tools.sh installs g++-mingw-w64-x86-64)`;
}

let exe: string | undefined;

test("every koffi prototype compiles against windows.h (parameter count, widths, signedness, pointees, callbacks)", { skip: haveCompiler() }, () => {
  fs.mkdirSync(out, { recursive: true });
  const src = path.join(out, "check.cpp");
  fs.writeFileSync(src, cppSource(decls, structs));
  const target = path.join(out, "check.exe");
  const r = spawnSync(CXX, ["-std=c++17", "-Wall", "-Werror", "-static", "-o", target, src], { encoding: "utf8" });
  const errors = (r.stderr ?? "").split("\n").filter((l) => /error/.test(l));
  assert.equal(r.status, 0, `the generated check (${src}) does not compile:\n${errors.join("\n") || r.stderr}`);
  exe = target;
  assert.ok(decls.length >= 40, `declarations checked: ${decls.length}`);
});

test("struct layouts, hand-read offsets and constants equal windows.h (the program run under Wine)", { skip: haveCompiler() }, (t) => {
  assert.ok(exe, "the check program was built");
  let wine: string;
  try {
    wine = execFileSync("bash", [path.join(root, "scripts", "install-wine.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (err) {
    t.skip(`Wine is not available: ${String((err as { stderr?: string }).stderr ?? err).trim()}`);
    return;
  }
  const env: NodeJS.ProcessEnv = { ...process.env, WINEPREFIX: path.join(root, ".cache", "wine-prefix"), WINEDEBUG: "-all" };
  delete env.DISPLAY;
  const text = execFileSync(wine, [exe], { env, encoding: "utf8", timeout: 120_000 });
  const real = JSON.parse(text.trim().split("\n").pop()!) as {
    structs: Record<string, { size: number; fields: Record<string, [number, number]> }>;
    hand: Record<string, number>;
    constants: Record<string, number | null>;
  };
  const diffs: string[] = [];
  const ours = koffiView();
  for (const [name, s] of Object.entries(ours)) {
    const w = real.structs[name];
    if (s.size !== w.size) diffs.push(`sizeof(${name}): koffi ${s.size}, windows.h ${w.size}`);
    for (const [f, [off, size]] of Object.entries(s.fields)) {
      const [woff, wsize] = w.fields[f];
      if (off !== woff) diffs.push(`offsetof(${name}, ${f}): koffi ${off}, windows.h ${woff}`);
      if (size !== wsize) diffs.push(`sizeof(${name}.${f}): koffi ${size}, windows.h ${wsize}`);
    }
  }
  for (const [key, h] of Object.entries(handLayouts())) if (real.hand[key] !== h.value) diffs.push(`${key}: ours ${h.value}, windows.h ${real.hand[key]}`);
  for (const [name, value] of Object.entries(constants())) {
    if (OWN_CONSTANTS.has(name)) continue;
    if (real.constants[name] === null) diffs.push(`${name}: not a windows.h macro`);
    else if (real.constants[name] !== value >>> 0) diffs.push(`${name}: ours ${value}, windows.h ${real.constants[name]}`);
  }
  assert.deepEqual(diffs, []);
  // the comparison saw every structure (and koffi agrees with itself)
  assert.deepEqual(Object.keys(real.structs).sort(), Object.keys(ours).sort());
  assert.equal(koffi.sizeof(koffi.type("uint32_t")), 4);
});
