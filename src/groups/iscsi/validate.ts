/**
 * Input rules of the iSCSI group (upstream validates nothing and crashes on a missing portal,
 * docs/upstream-behaviour.md: Errors, iSCSI). All failures are InvalidArgument; secrets are never quoted.
 */
import { isIP } from "node:net";
import { invalidArgument } from "../../errors.ts";
import type { TargetPortal } from "./types.ts";

/** The iSCSI well-known port, used when a request says 0 (upstream's rule). */
export const DEFAULT_ISCSI_PORT = 3260;
/** Longest CHAP name or secret, in UTF-8 bytes (open-iscsi's AUTH_STR_MAX_LEN 256, NUL included). */
export const MAX_CHAP_BYTES = 255;
/** Longest iSCSI name, in bytes (RFC 3720 §3.2.6.1). */
export const MAX_IQN_BYTES = 223;

const quote = (s: string) => JSON.stringify(s.length > 100 ? `${s.slice(0, 100)}...` : s);
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
/**
 * iqn.yyyy-mm.reversed.domain[:anything], eui.<16 hex>, naa.<16|32 hex>. The part after `:` is
 * limited to letters, digits and `.:-_` (RFC 3722 allows more Unicode; real names never use it,
 * and a name becomes a directory name in open-iscsi's node database, so `/` and `,` must not pass).
 */
const IQN = /^(?:iqn\.\d{4}-\d{2}\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[A-Za-z0-9.:_-]+)?|eui\.[0-9A-Fa-f]{16}|naa\.[0-9A-Fa-f]{16}(?:[0-9A-Fa-f]{16})?)$/;
const CONTROL = /[\x00-\x1f\x7f]/;

/**
 * A present portal with a usable address and port: port 0 → 3260; 1..65535 kept; anything else,
 * a missing portal, an empty or malformed address → InvalidArgument. IPv6 literals may come with
 * brackets, which are dropped.
 */
export function checkPortal(portal: TargetPortal | undefined): TargetPortal {
  if (!portal) throw invalidArgument("target_portal is required");
  let address = portal.targetAddress;
  if (address === "") throw invalidArgument("target_portal.target_address is required");
  if (/^\[.*\]$/.test(address)) address = address.slice(1, -1);
  if (!(isIP(address) !== 0 || HOST_NAME.test(address))) {
    throw invalidArgument(`target_portal.target_address ${quote(portal.targetAddress)} is not a host name or IP address`);
  }
  const port = portal.targetPort === 0 ? DEFAULT_ISCSI_PORT : portal.targetPort;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalidArgument(`target_portal.target_port ${portal.targetPort} is not a TCP port`);
  return { targetAddress: address, targetPort: port };
}

/** A well-formed iSCSI name (see {@link IQN}), at most {@link MAX_IQN_BYTES}. */
export function checkIqn(iqn: string): string {
  if (iqn === "") throw invalidArgument("iqn is required");
  if (Buffer.byteLength(iqn, "utf8") > MAX_IQN_BYTES || !IQN.test(iqn)) throw invalidArgument(`iqn ${quote(iqn)} is not a valid iSCSI name`);
  return iqn;
}

/** A CHAP user name: at most 255 bytes, no control characters, no surrounding blanks. */
export function checkChapName(name: string, field: string): string {
  if (Buffer.byteLength(name, "utf8") > MAX_CHAP_BYTES) throw invalidArgument(`${field} is longer than ${MAX_CHAP_BYTES} bytes`);
  if (CONTROL.test(name) || name.trim() !== name) throw invalidArgument(`${field} ${quote(name)} contains control characters or surrounding blanks`);
  return name;
}

/** A CHAP secret: same rules as a name, but never quoted in a message. */
export function checkChapSecret(secret: string, field: string): string {
  if (Buffer.byteLength(secret, "utf8") > MAX_CHAP_BYTES) throw invalidArgument(`${field} is longer than ${MAX_CHAP_BYTES} bytes`);
  if (CONTROL.test(secret) || secret.trim() !== secret) throw invalidArgument(`${field} contains control characters or surrounding blanks`);
  return secret;
}

/** Portal identity: addresses compare case-insensitively (host names), ports exactly. */
export const samePortal = (a: TargetPortal, b: TargetPortal) =>
  a.targetAddress.toLowerCase() === b.targetAddress.toLowerCase() && a.targetPort === b.targetPort;
