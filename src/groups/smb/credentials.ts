import { invalidArgument } from "../../errors.ts";
import { quoteForError } from "./remote-path.ts";

/** Longest accepted user name, in UTF-8 bytes (a UPN may be long; 1 KiB is far above real ones). */
export const MAX_USERNAME_BYTES = 1024;
/** Longest accepted password, in UTF-8 bytes. */
export const MAX_PASSWORD_BYTES = 1024;

const CONTROL = /[\x00-\x1f\x7f]/;

/**
 * NewSmbGlobalMapping's credentials. User name: at most {@link MAX_USERNAME_BYTES}, no control
 * characters. Password: at most {@link MAX_PASSWORD_BYTES}, no NUL, CR or LF (no credential store
 * or credentials file can hold them). InvalidArgument otherwise; messages never include the password.
 */
export function validateCredentials(username: string, password: string): void {
  if (Buffer.byteLength(username, "utf8") > MAX_USERNAME_BYTES) throw invalidArgument(`username is longer than ${MAX_USERNAME_BYTES} bytes`);
  if (CONTROL.test(username)) throw invalidArgument(`username ${quoteForError(username)} contains control characters`);
  if (Buffer.byteLength(password, "utf8") > MAX_PASSWORD_BYTES) throw invalidArgument(`password is longer than ${MAX_PASSWORD_BYTES} bytes`);
  if (/[\0\r\n]/.test(password)) throw invalidArgument("password contains a NUL, CR or LF character");
}
