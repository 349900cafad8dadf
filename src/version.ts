/** The build's version; the Windows build replaces it (esbuild define), development runs say "dev". */
export const version: string = (globalThis as { CSI_PROXY_VERSION?: string }).CSI_PROXY_VERSION ?? "dev";
