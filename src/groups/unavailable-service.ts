import { unimplemented } from "../errors.ts";

/**
 * A group service whose host layer does not exist on this platform (yet): every method rejects
 * with Unimplemented and a message naming the group and platform, so every RPC still answers
 * through the normal path with a clear status. docs/status.md lists which groups this applies to.
 */
export function unavailableService<T extends object>(group: string, platform: string, detail = ""): T {
  return new Proxy({} as T, {
    get(_target, method) {
      if (typeof method !== "string" || method === "then") return undefined;
      return async () => {
        throw unimplemented(`${group} ${method}: no host implementation for ${platform} yet${detail ? ` (${detail})` : ""}`);
      };
    },
  });
}
