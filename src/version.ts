import { createRequire } from "node:module";

/**
 * The build's version: the Windows build defines it (esbuild), otherwise `v` + package.json's version
 * (read with require: a JSON import warns on Node 20 before 20.19ish).
 */
export const version: string =
  (globalThis as { CSI_PROXY_VERSION?: string }).CSI_PROXY_VERSION ?? `v${(createRequire(import.meta.url)("../package.json") as { version: string }).version}`;

/** The commit the build was made from (defined by scripts/build.ts and build-exe.ts); "source" when running the TypeScript sources. */
export const commit: string = (globalThis as { CSI_PROXY_COMMIT?: string }).CSI_PROXY_COMMIT ?? "source";
