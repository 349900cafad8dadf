// One of several processes racing on one state directory (node-locks.test.ts). argv:
//   counter <lockDir> <counterFile> <n> <inprocess|node|nodewide>     n read-increment-write turns on one file
//     (nodewide: state/node-locks-for.ts nodeLocks with a state directory of this process's own,
//     <lockDir>/state-<pid>, and the lock directory <lockDir>/nodewide)
//   smb <stateDir> <worldDir> <id> <n> <inprocess|node>      n NewSmbGlobalMapping of one share root, then n removals
// Waits for <dir>/go before starting, prints one JSON line when done. Under node.exe (bundled as
// CommonJS by the Wine suite) KOFFI_DIR names the directory holding koffi\win32_x64\koffi.node.
import { existsSync, writeFileSync, mkdirSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { createNodeLocks } from "../../src/state/node-locks.ts";
import { createKeyedMutex, type KeyedMutex } from "../../src/util/keyed-mutex.ts";
import { nodeLocks } from "../../src/state/node-locks-for.ts";
import { createRefCountedSmb } from "./ref-counted-smb.ts";
import { smbStateFile } from "../../src/groups/smb/smb-state.ts";
import type { PathPolicy } from "../../src/policy/path-policy.ts";
import { FileSmbHost } from "../doubles/file-smb-host.ts";

if (process.env.KOFFI_DIR) (process as NodeJS.Process & { resourcesPath?: string }).resourcesPath = process.env.KOFFI_DIR;
const [mode, dir, a, b, c, d] = process.argv.slice(2);
const lockKind = mode === "counter" ? c : d;
const platform = process.platform === "win32" ? "win32" : "linux";
const quiet = { info() {}, warning() {} };
const locksReady: Promise<KeyedMutex> =
  lockKind === "nodewide"
    ? nodeLocks({ platform, stateDir: path.join(dir, `state-${process.pid}`), lockDir: path.join(dir, "nodewide"), logger: quiet }, null)
    : Promise.resolve(lockKind === "node" ? createNodeLocks({ dir: path.join(dir, "locks"), platform }) : createKeyedMutex());

async function barrier(go: string) {
  while (!existsSync(go)) await new Promise((r) => setTimeout(r, 5));
}

async function main(): Promise<void> {
const locks = await locksReady;
if (mode === "counter") {
  const file = a, n = Number(b);
  await barrier(path.join(dir, "go"));
  await Promise.all(
    Array.from({ length: n }, () =>
      locks.run("counter:one", async () => {
        const v = Number(await readFile(file, "utf8"));
        await new Promise((r) => setImmediate(r));
        await writeFile(file, String(v + 1));
      }),
    ),
  );
  console.log(JSON.stringify({ done: n }));
} else {
  const world = a, id = b, n = Number(c);
  const host = new FileSmbHost(world, id);
  const allowAll = { check: async (p: string) => p } as unknown as PathPolicy;
  const smb = await createRefCountedSmb({ host, policy: allowAll, state: smbStateFile(dir), requirePrivacy: false, platform: "linux", sweepIntervalMs: 0, locks });
  const links = path.join(world, "links");
  mkdirSync(links, { recursive: true });
  await barrier(path.join(world, "go"));
  const remote = (i: number) => `\\\\srv\\share\\${id}-${i}`;
  const errors: string[] = [];
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      smb.newSmbGlobalMapping({ remotePath: remote(i), localPath: path.join(links, `${id}-${i}`), username: "u", password: "p" }).catch((e) => errors.push(String(e))),
    ),
  );
  writeFileSync(path.join(world, `mapped-${id}`), "");
  await barrier(path.join(world, "remove"));
  await Promise.all(Array.from({ length: n }, (_, i) => smb.removeSmbGlobalMapping({ remotePath: remote(i) }).catch((e) => errors.push(String(e)))));
  smb.close();
  console.log(JSON.stringify({ errors }));
}
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
