/**
 * Comparison of our answers with upstream's recorded ones (test/oracle/corpus/<tag>.json).
 *
 * Texts are compared, never codes (upstream answers Unknown for every error; ours carry precise
 * codes). Upstream's messages end, where Go's os produced them, with Wine's FormatMessage text,
 * which words some codes differently from Windows: {@link windowsText} maps that part, by error
 * code, to Windows' own text (src/win32/win32-errors.ts), so what is compared is what upstream says on
 * Windows.
 */
import { win32Message } from "../../src/win32/win32-errors.ts";
import type { Answer } from "./oracle-run.ts";

/** Wine 8's message-table texts (en-US) and the Win32 error code each one is. */
const WINE_TEXTS: Record<string, number> = {
  "File not found.": 2,
  "Path not found.": 3,
  "Access denied.": 5,
  "Invalid name.": 123,
  "Directory is not empty.": 145,
};

/** `message` with a trailing Wine system message replaced by Windows' text for the same code. */
export function windowsText(message: string): string {
  for (const [wine, code] of Object.entries(WINE_TEXTS)) {
    if (message.endsWith(`: ${wine}`)) return message.slice(0, -wine.length) + win32Message(code)!;
  }
  return message;
}

export interface RecordedRow {
  id: string;
  group: string;
  version: string;
  method: string;
  request: Record<string, unknown>;
  fixture?: boolean;
  ok?: Record<string, unknown>;
  code?: number;
  message?: string;
  error?: string;
  crash?: unknown;
  output?: string;
  /** The server started a process (Wine's stub powershell.exe) during the call. */
  powershell?: boolean;
}

export interface Recording {
  provenance: Record<string, unknown>;
  rows: RecordedRow[];
  flags: { id: string; args: string[]; exitCode: number | null; output: string }[];
}

/** What a row answered, as text: `ok <response JSON>`, `error <message>`, `crash`, `none <reason>`. */
export function answerText(a: Answer | RecordedRow | undefined): string {
  if (!a) return "none (no answer)";
  if ("crash" in a && a.crash !== undefined) return "crash";
  if ("ok" in a && a.ok !== undefined) return `ok ${JSON.stringify(sortKeys(a.ok))}`;
  if ("message" in a && a.message !== undefined) return `error ${windowsText(a.message)}`;
  if ("error" in a && a.error !== undefined) return `none ${a.error}`;
  return "none (empty)";
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]));
  return v;
}
