/**
 * What the SMB group's tests share (src/groups/smb/smb-service.test.ts, smb-group.test.ts): the
 * group built as compose builds it over a FakeSmbHost, a state file in memory, a Linux path policy
 * allowing the kubelet dir, and the request shapes.
 */
import { FakeSmbHost } from "../doubles/fake-smb-host.ts";
import type { JsonStateFile } from "../../src/state/atomic-file.ts";
import { createPathPolicy } from "../../src/policy/path-policy.ts";
import { validateSmbState, type SmbState } from "../../src/groups/smb/smb-state.ts";
import { createRefCountedSmb, type RefCountedSmbService } from "./ref-counted-smb.ts";

export const KUBELET = "/var/lib/kubelet";
const existing = new Set(["/", "/var", "/var/lib", KUBELET]);
export const linuxPolicy = () =>
  createPathPolicy({ platform: "linux", allowedDirs: [KUBELET], resolve: async (p) => (existing.has(p) ? p : null) });

/** A state file in memory: what `save` stored, as JSON text, like the real file. */
export function memoryState(initial?: SmbState): JsonStateFile<SmbState> & { text: string | null; saves: number } {
  const mem = {
    path: "/memory/smb-state.json",
    text: initial ? JSON.stringify(initial) : (null as string | null),
    saves: 0,
    async load() {
      return mem.text === null ? null : validateSmbState(JSON.parse(mem.text));
    },
    async save(value: SmbState) {
      mem.saves++;
      mem.text = JSON.stringify(value);
    },
  };
  return mem;
}

export interface Setup {
  host: FakeSmbHost;
  state: ReturnType<typeof memoryState>;
  smb: RefCountedSmbService;
  logs: string[];
}

/** The SMB group over `host` and `state` (default: new ones), loaded and reconciled, no sweep timer; its log lines collected as `I …` / `W …`. */
export async function setupSmb(options: { host?: FakeSmbHost; state?: ReturnType<typeof memoryState>; requirePrivacy?: boolean } = {}): Promise<Setup> {
  const host = options.host ?? new FakeSmbHost();
  const state = options.state ?? memoryState();
  const logs: string[] = [];
  const smb = await createRefCountedSmb({
    host,
    policy: linuxPolicy(),
    state,
    requirePrivacy: options.requirePrivacy ?? true,
    platform: "linux",
    sweepIntervalMs: 0,
    log: { info: (m) => logs.push(`I ${m}`), warning: (m) => logs.push(`W ${m}`) },
  });
  return { host, state, smb, logs };
}

export const ROOT = "\\\\server\\share";
export const local = (name: string) => `${KUBELET}/plugins/smb/${name}/globalmount`;
export const req = (remotePath: string, localPath = "", username = "user", password = "Pa55-w0rd!") => ({ remotePath, localPath, username, password });
