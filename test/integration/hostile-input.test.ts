// Hostile input in every field of every RPC: the daemon never crashes, never answers Unknown, and
// keeps serving. Requests are built from the descriptors, so new fields are covered automatically.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { create, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { ConnectError, Code } from "@connectrpc/connect";
import { allEndpoints, catalog } from "../../src/api/catalog.ts";
import { connectGroup } from "../../src/client/connect-group.ts";
import { startDaemonProcess, type DaemonProcess } from "../helpers/daemon-process.ts";
import { hostileStrings } from "../helpers/hostile-strings.ts";


/** A request with `value` in every string field (recursively), numbers at their extremes, bools true. */
function fill(message: DescMessage, value: string, big: boolean, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of message.fields) {
    if (f.fieldKind === "scalar") {
      if (f.scalar === 9 /* string */) out[f.localName] = value;
      else if (f.scalar === 8 /* bool */) out[f.localName] = true;
      else if ([3, 4, 16, 18, 6].includes(f.scalar) /* 64-bit */) out[f.localName] = big ? -9223372036854775808n : 0n;
      else if ([5, 15, 17].includes(f.scalar) /* signed 32 */) out[f.localName] = big ? -2147483648 : 0;
      else out[f.localName] = big ? 4294967295 : 0;
    } else if (f.fieldKind === "enum") out[f.localName] = big ? 2147483647 : 0;
    else if (f.fieldKind === "message" && depth < 3) out[f.localName] = fill(f.message, value, big, depth + 1);
    else if (f.fieldKind === "list" && f.listKind === "scalar" && f.scalar === 9) out[f.localName] = [value];
  }
  return out;
}

describe("hostile input on every RPC", () => {
  let daemon: DaemonProcess;
  before(async () => {
    daemon = await startDaemonProcess();
  });
  after(async () => {
    assert.equal(await daemon.stop(), 0);
  });

  for (const { group, version } of allEndpoints()) {
    it(`${group} ${version}`, async () => {
      const conn = await connectGroup(group, { socketDir: daemon.socketDir, versions: [version] as never, timeoutMs: 30_000 });
      const service = (catalog as unknown as Record<string, Record<string, DescService>>)[group][version];
      for (const m of service.methods) {
        const requests = [create(m.input), ...hostileStrings.flatMap((s, i) => [create(m.input, fill(m.input, s, i % 2 === 0) as never)])];
        for (const request of requests) {
          try {
            await (conn.client as Record<string, (r: unknown) => Promise<unknown>>)[m.localName](request);
          } catch (err) {
            const e = ConnectError.from(err);
            assert.notEqual(e.code, Code.Unknown, `${m.name}: ${e.rawMessage}`);
            assert.notEqual(e.code, Code.Unavailable, `${m.name}: daemon unreachable: ${e.rawMessage}`);
            if (group === "filesystem") assert.notEqual(e.code, Code.Internal, `${m.name}: ${e.rawMessage}`);
          }
        }
      }
      conn.close();
      assert.equal(daemon.child.exitCode, null, "daemon still running");
    });
  }
});
