import { CsiProxyError } from "../../errors.ts";
import { FragmentError } from "../../compat/driver-fragments.ts";

/**
 * Runs a legacy volume method (v1alpha1–v1beta2 DismountVolume, VolumeStats, GetVolumeDiskNumber,
 * GetVolumeIDFromMount) that upstream implements by forwarding to the current method `target`.
 * Every failure, validation or host, keeps its code (a driver-fragment error keeps its situation)
 * and its message gains upstream's forwarder prefix: `Forward to <target> failed, err=<message>`.
 * The inner text stays whole, so a driver's substring match still finds it.
 */
export async function forwarded<T>(target: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (reason) {
    const inner = CsiProxyError.from(reason);
    const message = `Forward to ${target} failed, err=${inner.message}`;
    if (inner instanceof FragmentError) throw new FragmentError(inner.situation, inner.code, message);
    throw new CsiProxyError(inner.code, message, { cause: reason });
  }
}
