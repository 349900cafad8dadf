/**
 * node:test reporter that writes one JSON line per skipped test or suite: `{ file, name, reason }`
 * (file relative to the repository). `npm test` sends it to `.test-skips.jsonl`; `check-skips.ts` reads it.
 */
import path from "node:path";

interface TestEventData {
  name: string;
  file?: string;
  skip?: string | boolean;
}

const root = path.resolve(import.meta.dirname, "../..");

export default async function* skipReporter(source: AsyncIterable<{ type: string; data: TestEventData }>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { skip, name, file } = event.data;
    if (skip === undefined || skip === false) continue;
    const rel = file === undefined ? "" : path.relative(root, file);
    yield `${JSON.stringify({ file: rel, name, reason: skip === true ? "" : skip })}\n`;
  }
}
