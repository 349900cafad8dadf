// Fault injection into the daemon's host tools without test hooks in the daemon: a directory of
// stand-ins (bash scripts named after the real tools) meant to be bound over /usr/local/sbin, the
// first directory of the daemon's fixed PATH (src/host/exec/run-command.ts), in a private mount
// namespace (smb-iscsi-system-fixtures.ts mountNamespace). Each stand-in logs its argv and, unless
// a fault is armed for it, execs the real tool from /usr/sbin, /usr/bin, /sbin or /bin. A `mount
// -t cifs` becomes a 1 MiB tmpfs with the same source (this kernel has no cifs module).
//
// A fault is armed for one tool and fires once, on the first call whose argv (joined by spaces)
// matches an extended regular expression; the rule file is removed as it fires, so the driver's
// retry after a restart runs the real tool. Actions:
//   fail         print "injected failure" on stderr, exit 1, change nothing
//   hang         block (the daemon's timeout must kill it), change nothing
//   hang-after   run the real tool to completion, then block
//   hang-ignoring-term  block with SIGTERM ignored, its pid in `<dir>/hang.pid` (only SIGKILL ends it)
//   hang-in-kernel  SIGTERM ignored, its pid in `<dir>/hang.pid`, then `stat` of the path given as
//                `device` (a held slow-fuse.ts file): it waits in the kernel, and once the FUSE daemon
//                took the request not even SIGKILL ends it until the file is released
//   kill-before  SIGKILL the daemon (the tool's parent), change nothing
//   kill-during  SIGKILL the daemon, then run the real tool to completion as an orphan
//   kill-after   run the real tool, then SIGKILL the daemon before it sees the result
//   detach       detach the loop device named in the rule (`losetup -d`), then run the real tool
// kill-during/kill-after touch `<dir>/done` when the real tool has finished (waitDone).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";

export type FaultAction = "fail" | "hang" | "hang-after" | "hang-ignoring-term" | "hang-in-kernel" | "kill-before" | "kill-during" | "kill-after" | "detach";

/** The tools the Linux disk, volume and SMB hosts run for their changes. */
export const FAULT_TOOLS = ["sfdisk", "partx", "mkfs.ext4", "mkfs.xfs", "mount", "umount", "blockdev", "resize2fs", "e2fsck"] as const;
export type FaultTool = (typeof FAULT_TOOLS)[number];

const script = (dir: string) => `#!/bin/bash
name=\${0##*/}
dir=${JSON.stringify(dir)}
real=""
for d in /usr/sbin /usr/bin /sbin /bin; do if [ -x "$d/$name" ]; then real="$d/$name"; break; fi; done
args=("$@")
if [ "$name" = mount ] && [ "$1" = -t ] && [ "$2" = cifs ]; then args=(-t tmpfs -o size=1m "$3" "$4"); fi
printf '%s\\n' "$name $*" >> "$dir/calls.log"
action=""; arg=""
rule="$dir/rules/$name"
if [ -f "$rule" ]; then
  { read -r action; read -r arg; read -r pattern; } < "$rule"
  if [[ "$*" =~ $pattern ]]; then rm -f "$rule"; printf '%s\\n' "$name $action" >> "$dir/fired.log"; else action=""; fi
fi
case "$action" in
  fail) echo "$name: injected failure" >&2; exit 1 ;;
  hang) exec sleep 300 ;;
  hang-after) "$real" "\${args[@]}"; exec sleep 300 ;;
  hang-ignoring-term) trap '' TERM; echo $$ > "$dir/hang.pid"; exec sleep 300 ;;
  hang-in-kernel) trap '' TERM; echo $$ > "$dir/hang.pid"; exec stat -- "$arg" ;;
  kill-before) kill -9 "$PPID"; exit 1 ;;
  kill-during) kill -9 "$PPID"; "$real" "\${args[@]}"; rc=$?; touch "$dir/done"; exit $rc ;;
  kill-after) "$real" "\${args[@]}"; rc=$?; kill -9 "$PPID"; touch "$dir/done"; exit $rc ;;
  detach) losetup --detach "$arg"; exec "$real" "\${args[@]}" ;;
  *) exec "$real" "\${args[@]}" ;;
esac
`;

export interface FaultTools {
  /** Bind this over /usr/local/sbin in the daemon's mount namespace. */
  binDir: string;
  /** Arms a one-shot `action` for the next call of `tool` whose argv matches `pattern` (default: any). */
  arm(tool: FaultTool, action: FaultAction, options?: { pattern?: string; device?: string }): void;
  /** Whether the armed fault of `tool` has fired. */
  fired(tool: FaultTool): boolean;
  /** Removes every armed fault and the done marker. */
  reset(): void;
  /** Resolves when a kill-during/kill-after tool has finished its real work. */
  waitDone(timeoutMs?: number): Promise<void>;
  /** Every stand-in call so far: `<tool> <argv…>`. */
  calls(): string[];
}

export function createFaultTools(dir: string): FaultTools {
  const binDir = path.join(dir, "bin");
  const rules = path.join(dir, "rules");
  mkdirSync(binDir, { recursive: true });
  mkdirSync(rules, { recursive: true });
  for (const tool of FAULT_TOOLS) writeFileSync(path.join(binDir, tool), script(dir), { mode: 0o755 });
  const done = path.join(dir, "done");
  return {
    binDir,
    arm(tool, action, options = {}) {
      rmSync(done, { force: true });
      writeFileSync(path.join(rules, tool), `${action}\n${options.device ?? ""}\n${options.pattern ?? "."}\n`);
    },
    fired: (tool) => !existsSync(path.join(rules, tool)),
    reset() {
      for (const tool of FAULT_TOOLS) rmSync(path.join(rules, tool), { force: true });
      rmSync(done, { force: true });
    },
    async waitDone(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!existsSync(done)) {
        if (Date.now() > deadline) throw new Error("the interrupted tool did not finish");
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    calls() {
      try {
        return readFileSync(path.join(dir, "calls.log"), "utf8").split("\n").filter(Boolean);
      } catch {
        return [];
      }
    },
  };
}
