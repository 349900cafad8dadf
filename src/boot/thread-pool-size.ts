/**
 * libuv's thread pool, sized before its first use. Host calls that can hang (a lookup on a dead SMB
 * mapping or device, a stuck FUSE daemon) each hold one pool thread until the host answers. Calls on
 * request paths are admitted per mount (src/host/mount-gate.ts: a few threads per mount, three
 * quarters of the pool in all), so hung calls never take the quarter everything else needs; the
 * pool's size sets how many dead mounts that survives (32 here). Idle pool threads cost no measurable
 * memory (measured: RSS equal with 4 and 64). An operator's UV_THREADPOOL_SIZE wins.
 *
 * Effective when this module runs before anything used the pool: so on Node ≥ 22 and in the exe;
 * Node 20's ESM loader reads the entry file through the pool first, so there the variable must come
 * from the environment (packaging/systemd/csi-proxy.service sets it).
 */
export const THREAD_POOL_SIZE = 128;

process.env["UV_THREADPOOL_SIZE"] ??= String(THREAD_POOL_SIZE);
