/**
 * SMB remote paths: upstream's normalisation (docs/upstream-behaviour.md, SMB, steps 1–2) plus the
 * validation upstream lacks. Every failure is InvalidArgument.
 */
import { invalidArgument } from "../../errors.ts";

export interface SmbRemotePath {
  /** `\\server\share`, lower-cased: what a mapping and its reference count are keyed by. */
  root: string;
  /** `\\Server\Share\sub\dir`: `/` → `\`, empty components dropped, original case kept. */
  remotePath: string;
  server: string;
  share: string;
  /** Components below the share (may be empty). */
  subPath: string[];
}

/** Longest accepted remote path, in UTF-8 bytes (well above anything a driver builds). */
export const MAX_REMOTE_PATH_BYTES = 4096;

const CONTROL = /[\x00-\x1f\x7f]/;
/** Host names (RFC 1123 labels, `_` tolerated as Windows does) and IPv4 literals. IPv6 goes through `ipv6-literal.net` names, as in UNC. */
const SERVER = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;
/** Characters Windows forbids in share names. */
const SHARE_FORBIDDEN = /["/\\[\]:|<>+=;,?*]/;
/** Characters Windows forbids in file names. */
const NAME_FORBIDDEN = /[<>:"|?*]/;
/** `.`, `..`, `...`, `. .`: names that are, or that some Win32 layers trim to, a relative step. */
const DOTS_ONLY = /^[. ]+$/;

/** The input quoted for an error message, cut so a 100 KB string cannot flood logs or statuses. */
export const quoteForError = (s: string) => JSON.stringify(cutForError(s));
/** The input cut to 200 characters for an error message. */
export const cutForError = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}...` : s);

/**
 * Normalises and validates a remote path, with upstream's texts for its two checks: empty →
 * `remote path is empty`; fewer than two components → `remote path (<p>) is invalid`. Stricter
 * than upstream (checked before the second): longer than {@link MAX_REMOTE_PATH_BYTES}, control
 * characters; after it:
 * a server that is no host name or IPv4 address, a share name Windows would refuse (or over 80
 * characters), a component below the share that is `.`/`..`-like or contains `<>:"|?*`.
 */
export function parseRemotePath(input: string): SmbRemotePath {
  if (input === "") throw invalidArgument("remote path is empty");
  const bytes = Buffer.byteLength(input, "utf8");
  if (bytes > MAX_REMOTE_PATH_BYTES) throw invalidArgument(`remote path length ${bytes} exceeds maximum bytes: ${MAX_REMOTE_PATH_BYTES}`);
  if (CONTROL.test(input)) throw invalidArgument(`remote path ${quoteForError(input)} contains control characters`);
  const parts = input.replaceAll("/", "\\").split("\\").filter((p) => p !== "");
  if (parts.length < 2) throw invalidArgument(`remote path (${cutForError(input)}) is invalid`);
  const [server, share, ...subPath] = parts;
  if (!SERVER.test(server)) throw invalidArgument(`remote path ${quoteForError(input)}: server ${quoteForError(server)} is not a host name or IPv4 address`);
  if (share.length > 80 || SHARE_FORBIDDEN.test(share) || DOTS_ONLY.test(share)) {
    throw invalidArgument(`remote path ${quoteForError(input)}: invalid share name ${quoteForError(share)}`);
  }
  for (const name of subPath) {
    if (DOTS_ONLY.test(name) || NAME_FORBIDDEN.test(name) || Buffer.byteLength(name, "utf8") > 255) {
      throw invalidArgument(`remote path ${quoteForError(input)}: invalid path component ${quoteForError(name)}`);
    }
  }
  return {
    root: `\\\\${server}\\${share}`.toLowerCase(),
    remotePath: `\\\\${[server, share, ...subPath].join("\\")}`,
    server,
    share,
    subPath,
  };
}
