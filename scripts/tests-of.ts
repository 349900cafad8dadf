/**
 * Lists the test files that test a module directly (import it or run it):
 *   node scripts/tests-of.ts src/policy/block-policy.ts
 * Without an argument, lists every module with none. Convention: docs/architecture.md "Tests".
 */
import * as path from "node:path";
import { repoRoot, testsByModule } from "../test/layout/module-tests.ts";

const map = testsByModule();
const arg = process.argv[2];
if (arg !== undefined) {
  const key = path.relative(repoRoot, path.resolve(arg));
  const tests = map.get(key);
  if (tests === undefined) {
    console.error(`${key} is not a product module of src/`);
    process.exit(2);
  }
  console.log(tests.length ? tests.sort((a, b) => a.localeCompare(b)).join("\n") : `${key}: no direct test (see test/layout/module-tests.test.ts for its exemption)`);
} else {
  for (const [m, tests] of [...map].sort(([a], [b]) => a.localeCompare(b))) if (tests.length === 0) console.log(m);
}
