import pkg from "../package.json" with { type: "json" };

/** The build's version: the Windows build defines it (esbuild), otherwise `v` + package.json's version. */
export const version: string = (globalThis as { CSI_PROXY_VERSION?: string }).CSI_PROXY_VERSION ?? `v${pkg.version}`;
