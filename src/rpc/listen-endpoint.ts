import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { CsiProxyError, Code } from "../errors.ts";
import { LISTEN_BACKLOG } from "./transport-limits.ts";

/**
 * Listens on a Unix socket or Windows named pipe for one endpoint.
 *
 * Unix sockets: the directory is created (0700 when new), a socket left by a dead process is removed,
 * a socket answered by a live process makes this fail with AlreadyExists (never steal an endpoint),
 * and anything that is not a socket at that path is left alone (FailedPrecondition). The socket is
 * created mode 0600: only the server's user can connect. Its accept queue holds LISTEN_BACKLOG
 * connections not yet accepted (a client beyond it gets EAGAIN at connect).
 * Named pipes: libuv creates the first instance with FILE_FLAG_FIRST_PIPE_INSTANCE, so a pipe that
 * another process owns fails with EADDRINUSE, reported as AlreadyExists.
 * `secure` (Windows `-pipe-sddl`) runs once the endpoint listens; connections arriving before it
 * has finished are dropped, and if it fails the listener is closed and the error thrown.
 */
export async function listenEndpoint(
  address: string,
  onConnection: (socket: net.Socket) => void,
  options: { platform?: NodeJS.Platform; secure?: (address: string) => Promise<unknown> } = {},
): Promise<net.Server> {
  const isPipe = (options.platform ?? process.platform) === "win32";
  if (!isPipe) await prepareSocketPath(address);
  let secured = !options.secure;
  const server = net.createServer({ pauseOnConnect: false }, (socket) => {
    if (secured) return onConnection(socket);
    socket.on("error", () => {});
    socket.destroy();
  });
  if (!isPipe) holdSocketUmask();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ path: address, backlog: LISTEN_BACKLOG }, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new CsiProxyError(Code.AlreadyExists, `${address} is already served by another process`, { cause: err });
    if (code === "EACCES" || code === "EPERM") throw new CsiProxyError(Code.PermissionDenied, `cannot listen on ${address}: ${code}`, { cause: err });
    throw CsiProxyError.from(err);
  } finally {
    if (!isPipe) releaseSocketUmask();
  }
  if (options.secure) {
    try {
      await options.secure(address);
    } catch (err) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw CsiProxyError.from(err);
    }
    secured = true;
  }
  return server;
}

/**
 * umask 0177 while any endpoint is binding (sockets are created 0600), restored when the last one
 * is done: endpoints start concurrently, so each must not restore the mask another one set.
 */
let umaskHolders = 0;
let savedUmask = 0;
function holdSocketUmask(): void {
  if (umaskHolders++ === 0) savedUmask = process.umask(0o177);
}
function releaseSocketUmask(): void {
  if (--umaskHolders === 0) process.umask(savedUmask);
}

async function prepareSocketPath(socketPath: string): Promise<void> {
  await fs.promises.mkdir(path.dirname(socketPath), { recursive: true, mode: 0o700 });
  let stat: fs.Stats;
  try {
    stat = await fs.promises.lstat(socketPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  if (!stat.isSocket()) {
    throw new CsiProxyError(Code.FailedPrecondition, `${socketPath} exists and is not a socket; refusing to replace it`);
  }
  if (await isServed(socketPath)) {
    throw new CsiProxyError(Code.AlreadyExists, `${socketPath} is already served by another process`);
  }
  await fs.promises.unlink(socketPath);
}

/** True when a process accepts connections on the socket. */
function isServed(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect(socketPath);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
}
