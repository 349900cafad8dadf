import type { Duplex } from "node:stream";
import { loadKoffi } from "../util/koffi-loader.ts";

/** ioctl(2) request for the bytes in a socket's send queue not yet taken by the peer (Linux, include/uapi/asm-generic/ioctls.h: TIOCOUTQ). */
const SIOCOUTQ = 0x5411;

type Ioctl = (fd: number, request: number, out: Int32Array) => number;
let ioctl: Ioctl | undefined;

/**
 * Loads what kernelSendQueue needs (libc's ioctl through koffi), on Linux only; elsewhere, or
 * when it cannot be loaded, kernelSendQueue stays 0. Called once when the endpoints start.
 */
export async function prepareKernelSendQueue(platform: NodeJS.Platform = process.platform): Promise<void> {
  if (platform !== "linux" || ioctl) return;
  try {
    const koffi = await loadKoffi();
    ioctl = koffi.load("libc.so.6").func("int ioctl(int fd, unsigned long request, _Out_ int *out)") as unknown as Ioctl;
  } catch {
    ioctl = undefined;
  }
}

/**
 * Bytes the kernel holds in `socket`'s send queue that its peer has not read (SIOCOUTQ), so the
 * outbound budget counts what a client that does not read really makes us hold: up to the socket's
 * send buffer (~200 KiB per Unix socket) beyond Node's own `writableLength`. 0 when unknown (not
 * Linux, ioctl not loaded, no descriptor, an error). One syscall per call.
 */
export function kernelSendQueue(socket: Duplex): number {
  if (!ioctl) return 0;
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== "number" || fd < 0) return 0;
  const out = new Int32Array(1);
  return ioctl(fd, SIOCOUTQ, out) === 0 ? Math.max(0, out[0]) : 0;
}
