#!/usr/bin/env node
/**
 * csi-proxy's entry: sets up the process, then loads and runs the server (src/server-main.ts).
 * Exit codes: 0 clean stop, 1 startup failure (an unsupported Node.js included), 2 bad command line.
 *
 * The set-up modules are this file's only static imports, so they run before any module of the
 * program is evaluated — also in the bundles (dist/bundle/main.js, the exe), where the program
 * is a separately loaded chunk (a static import would put its shared chunks ahead of them).
 */
import "./boot/no-inspector.ts"; // first of all: SIGUSR1 never opens the inspector (see there)
import "./boot/supported-node.ts"; // then: an unsupported Node.js gets one line and exit 1, nothing else runs
import "./boot/v8-flags.ts"; // V8 flags: young-generation sizing, optimizing compilers held during start-up
import "./boot/thread-pool-size.ts"; // before anything uses libuv's thread pool
import { settleAfterStart } from "./boot/start-up-footprint.ts";

/** Once every endpoint listens: start-up's memory given back, then each burst's once the server is quiet. */
const afterStart = async () => {
  const report = await settleAfterStart();
  const { watchQuietFootprint } = await import("./boot/quiet-footprint.ts");
  watchQuietFootprint();
  return report;
};

import("./server-main.ts")
  .then(({ runServer }) => runServer(process.argv.slice(2), { afterStart: afterStart }))
  .then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`csi-proxy: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
