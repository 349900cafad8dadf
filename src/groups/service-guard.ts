/**
 * Run-time checks of the version-agnostic group services' arguments, for library callers of
 * `createServices` without TypeScript's types: every method's request must be an object with
 * exactly the fields its type declares (src/groups/<group>/types.ts), each of the declared kind,
 * and the options argument `{ signal?: AbortSignal }`. A bad argument is an InvalidArgument
 * CsiProxyError naming the field before the service runs (instead of a TypeError from inside);
 * the services' own validation (paths, names, ranges) then applies as for the daemon.
 *
 * Methods in {@link NO_REQUEST} take none (their only argument, if any, is options). Other
 * properties (e.g. the SMB service's `references()`) pass through unchanged. Keep both tables in
 * step with types.ts: service-guard.test.ts checks every RPC of the catalog reaches one of them.
 */
import { CsiProxyError, Code } from "../errors.ts";
import type { Services } from "./services.ts";
import { checkCallOptions } from "../util/call-scope.ts";

type Kind = "string" | "boolean" | "uint32" | "int64" | "portal?" | "authType";

/** The request fields of each method that takes one, by group and method. */
export const REQUESTS: { [G in keyof Services]: Partial<Record<keyof Services[G], Record<string, Kind>>> } = {
  filesystem: {
    pathExists: { path: "string" },
    mkdir: { path: "string" },
    rmdir: { path: "string", force: "boolean" },
    rmdirContents: { path: "string" },
    createSymlink: { sourcePath: "string", targetPath: "string" },
    isSymlink: { path: "string" },
  },
  disk: {
    partitionDisk: { diskNumber: "uint32" },
    getDiskStats: { diskNumber: "uint32" },
    setDiskState: { diskNumber: "uint32", isOnline: "boolean" },
    getDiskState: { diskNumber: "uint32" },
    getDiskNumberByName: { diskName: "string" },
  },
  volume: {
    listVolumesOnDisk: { diskNumber: "uint32", partitionNumber: "uint32" },
    mountVolume: { volumeId: "string", targetPath: "string" },
    unmountVolume: { volumeId: "string", targetPath: "string" },
    isVolumeFormatted: { volumeId: "string" },
    formatVolume: { volumeId: "string" },
    resizeVolume: { volumeId: "string", sizeBytes: "int64" },
    getVolumeStats: { volumeId: "string" },
    getDiskNumberFromVolumeId: { volumeId: "string" },
    getVolumeIdFromTargetPath: { targetPath: "string" },
    getClosestVolumeIdFromTargetPath: { targetPath: "string" },
    writeVolumeCache: { volumeId: "string" },
  },
  smb: {
    newSmbGlobalMapping: { remotePath: "string", localPath: "string", username: "string", password: "string" },
    removeSmbGlobalMapping: { remotePath: "string" },
  },
  iscsi: {
    addTargetPortal: { targetPortal: "portal?" },
    discoverTargetPortal: { targetPortal: "portal?" },
    removeTargetPortal: { targetPortal: "portal?" },
    connectTarget: { targetPortal: "portal?", iqn: "string", authType: "authType", chapUsername: "string", chapSecret: "string" },
    disconnectTarget: { targetPortal: "portal?", iqn: "string" },
    getTargetDisks: { targetPortal: "portal?", iqn: "string" },
    setMutualChapSecret: { mutualChapSecret: "string" },
  },
  system: {
    getService: { name: "string" },
    startService: { name: "string" },
    stopService: { name: "string", force: "boolean" },
  },
};

/** The methods without a request. */
export const NO_REQUEST: { [G in keyof Services]: (keyof Services[G])[] } = {
  filesystem: [],
  disk: ["listDiskLocations", "rescan", "listDiskIds"],
  volume: [],
  smb: [],
  iscsi: ["listTargetPortals"],
  system: ["getBIOSSerialNumber"],
};

const bad = (where: string, what: string) => new CsiProxyError(Code.InvalidArgument, `${where}: ${what}`);
const kindOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v);
const isPlain = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && [Object.prototype, null].includes(Object.getPrototypeOf(v) as object | null);

function checkField(kind: Kind, v: unknown, where: string): void {
  switch (kind) {
    case "string":
      if (typeof v !== "string") throw bad(where, `expected a string, got ${kindOf(v)}`);
      return;
    case "boolean":
      if (typeof v !== "boolean") throw bad(where, `expected a boolean, got ${kindOf(v)}`);
      return;
    case "uint32":
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 0xffffffff) throw bad(where, `expected an integer in [0, 4294967295], got ${typeof v === "number" ? v : kindOf(v)}`);
      return;
    case "int64":
      if (typeof v !== "bigint" || v < -(2n ** 63n) || v >= 2n ** 63n) throw bad(where, `expected a 64-bit bigint, got ${typeof v === "bigint" ? v : kindOf(v)}`);
      return;
    case "authType":
      if (v !== "NONE" && v !== "ONE_WAY_CHAP" && v !== "MUTUAL_CHAP") throw bad(where, `expected "NONE", "ONE_WAY_CHAP" or "MUTUAL_CHAP", got ${typeof v === "string" ? JSON.stringify(v) : kindOf(v)}`);
      return;
    case "portal?":
      if (v === undefined) return;
      checkRequest({ targetAddress: "string", targetPort: "uint32" }, v, where);
  }
}

function checkRequest(fields: Record<string, Kind>, req: unknown, where: string): void {
  if (!isPlain(req)) throw bad(where, `expected an object, got ${kindOf(req)}`);
  for (const key of Object.keys(req)) if (!(key in fields)) throw bad(`${where}.${key}`, `no such field (fields: ${Object.keys(fields).join(", ")})`);
  for (const [name, kind] of Object.entries(fields)) checkField(kind, req[name], `${where}.${name}`);
}

/** `services` with every method's arguments checked first (see module doc). */
export function guardServices(services: Services): Services {
  const guarded: Record<string, unknown> = {};
  for (const [group, service] of Object.entries(services) as [keyof Services, Record<string, unknown>][]) {
    const table = REQUESTS[group] as Record<string, Record<string, Kind> | undefined>;
    guarded[group] = new Proxy(service, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof prop !== "string" || typeof value !== "function") return value;
        const fields = Object.prototype.hasOwnProperty.call(table, prop) ? table[prop] : undefined;
        if (!fields && !(NO_REQUEST[group] as string[]).includes(prop)) return value;
        const fn = value as (...args: unknown[]) => Promise<unknown>;
        return async (...args: unknown[]) => {
          if (fields) {
            checkRequest(fields, args[0], `${group}.${prop} request`);
            checkCallOptions(args[1]);
          } else {
            checkCallOptions(args[0]);
          }
          return fn.apply(target, args);
        };
      },
    });
  }
  return guarded as unknown as Services;
}
