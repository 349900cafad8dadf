/**
 * The worker scripts travel as -EncodedCommand (UTF-16LE, base64: 8/3 characters of command line per
 * script character), and CreateProcess takes at most 32 767 characters of command line, terminating
 * NUL included. Each pool's whole command line (powershell.exe by its absolute path, every argument
 * joined by a space: no argument needs quotes) must leave at least HEADROOM characters, so that a
 * script change that would come near the limit fails here, on Linux, and not at a worker start on a
 * Windows node. docs/windows.md ("Two pools, two scripts") quotes the figures this prints.
 */
import { it } from "node:test";
import assert from "node:assert/strict";
import { powershellArgs, WORKER_SCRIPT } from "./worker-script.ts";
import { SMB_ISCSI_SYSTEM_SCRIPT } from "./worker-ops-smb-iscsi-system.ts";
import { powershellExe } from "../powershell-pool.ts";

/** CreateProcess's lpCommandLine limit, in characters, the terminating NUL included. */
const CREATE_PROCESS_MAX = 32_767;
/** Characters of command line each pool must leave unused (≈ 1 500 script characters). */
const HEADROOM = 4_000;

function commandLine(script: string): number {
  return [powershellExe({ SystemRoot: "C:\\Windows" }), ...powershellArgs(script)].join(" ").length + 1;
}

it(`each worker's command line leaves at least ${HEADROOM} of CreateProcess's ${CREATE_PROCESS_MAX} characters`, () => {
  for (const [name, script] of [["storage", WORKER_SCRIPT], ["SMB/iSCSI/System", SMB_ISCSI_SYSTEM_SCRIPT]] as const) {
    const length = commandLine(script);
    console.log(`${name}: script ${script.length} characters, command line ${length} characters, ${CREATE_PROCESS_MAX - length} left`);
    assert.ok(CREATE_PROCESS_MAX - length >= HEADROOM, `${name} worker: command line ${length} characters leaves ${CREATE_PROCESS_MAX - length} (< ${HEADROOM})`);
  }
  // dropping indentation (unindented) keeps the script's meaning only without multi-line string literals
  for (const script of [WORKER_SCRIPT, SMB_ISCSI_SYSTEM_SCRIPT]) {
    for (const line of script.split("\n")) {
      const quotes = line.replace(/''/g, "");
      assert.ok((quotes.match(/'/g) ?? []).length % 2 === 0 && (quotes.match(/"/g) ?? []).length % 2 === 0 && !/@['"]\s*$/.test(line), `a string literal spans lines at: ${line}`);
    }
  }
  // the two scripts as one would not fit: the reason there are two pools
  assert.ok(commandLine(WORKER_SCRIPT + SMB_ISCSI_SYSTEM_SCRIPT) > CREATE_PROCESS_MAX);
});
