/**
 * Build step: makes log lines of the bundles cite source files (`volume-service.ts:123`, as klog
 * cites `main.go:123`) instead of bundle chunks. For every line of a bundle file that holds a logging
 * call (`.info(`, `.warning(`, `.error(`, `.fatal(`), the file's source map (read here, at build time)
 * gives the TypeScript file and line it came from; the bundle gets a table of those lines, which
 * src/log/klog.ts consults for the caller's bundle file and line. The program never loads a source
 * map: the table holds only the logging lines (a few dozen entries per file).
 *
 * The table is one statement inserted before the final `//# sourceMappingURL` comment, so no earlier
 * line moves and the source map stays exact. Deterministic: same bundle, same table.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** The global klog.ts reads: bundle file basename → bundle line → `source.ts:line`. */
export const LOG_SITES_GLOBAL = "__csiProxyLogSites";

const LOGGING_CALL = /\.(?:info|warning|error|fatal)\(/g;
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** One decoded mapping segment: generated column → source index, original line (0-based). */
interface Segment {
  column: number;
  source: number;
  line: number;
}

/** Decodes a source map's `mappings` (VLQ, v3) into segments per generated line (segments without a source are skipped). */
export function decodeMappings(mappings: string): Segment[][] {
  const lines: Segment[][] = [];
  let source = 0, line = 0;
  for (const text of mappings.split(";")) {
    const segments: Segment[] = [];
    let column = 0;
    for (const seg of text.split(",")) {
      if (!seg) continue;
      const values: number[] = [];
      let value = 0, shift = 0;
      for (const ch of seg) {
        const digit = B64.indexOf(ch);
        if (digit < 0) throw new Error(`source map: bad VLQ character ${JSON.stringify(ch)}`);
        value += (digit & 31) << shift;
        if (digit & 32) shift += 5;
        else {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      column += values[0];
      if (values.length >= 4) {
        source += values[1];
        line += values[2];
        segments.push({ column, source, line });
      }
    }
    lines.push(segments);
  }
  return lines;
}

/**
 * The table for one bundle file: its 1-based lines holding a logging call → `basename.ts:line` of
 * the first call's source position, for sources under `src/` only.
 */
export function logSites(code: string, map: { sources: string[]; mappings: string }): Record<number, string> {
  const segments = decodeMappings(map.mappings);
  const sites: Record<number, string> = {};
  code.split("\n").forEach((text, i) => {
    for (const m of text.matchAll(LOGGING_CALL)) {
      // The segment covering the call: the last one starting at or before it on this line.
      const seg = segments[i]?.filter((s) => s.column <= m.index!).at(-1);
      const source = seg && map.sources[seg.source];
      if (!seg || !source || !/(^|\/)src\//.test(source)) continue;
      sites[i + 1] = `${path.basename(source)}:${seg.line + 1}`;
      break;
    }
  });
  return sites;
}

/** Adds the log-site table to every `.js` bundle file in `dir` (recursively) that has a linked source map and logging lines. */
export function addLogSites(dir: string): void {
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".js")) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (fs.existsSync(`${file}.map`)) addLogSitesToFile(file, entry.name);
  }
}

/**
 * Adds the log-site table to one bundle file, its source map linked (`<file>.map`) or inline (a
 * data URL). `key` is the file name the program's stack frames show for it; `"*"` for a program
 * that is one file whose frames may carry any name (the exe's embedded script is named after the exe).
 * `dropMap`: remove the sourceMappingURL comment afterwards (with an inline map, the map itself).
 */
export function addLogSitesToFile(file: string, key: string, options: { dropMap?: boolean } = {}): void {
  const code = fs.readFileSync(file, "utf8");
  const comment = code.lastIndexOf("\n//# sourceMappingURL=");
  if (comment < 0) throw new Error(`${file}: no sourceMappingURL comment`);
  const url = code.slice(comment + "\n//# sourceMappingURL=".length).trim();
  const inline = /^data:application\/json;(?:charset=utf-8;)?base64,(.*)$/.exec(url);
  const map = JSON.parse(inline ? Buffer.from(inline[1], "base64").toString("utf8") : fs.readFileSync(`${file}.map`, "utf8"));
  const sites = logSites(code, map);
  const statement = Object.keys(sites).length ? `\n(globalThis.${LOG_SITES_GLOBAL} ??= {})[${JSON.stringify(key)}] = ${JSON.stringify(sites)};` : "";
  fs.writeFileSync(file, `${code.slice(0, comment)}${statement}${options.dropMap ? "\n" : code.slice(comment)}`);
}
