import { statusMessage } from "../rpc/grpc-service.ts";

/**
 * A caller-given name (service, group, version, method) as an error message shows it: strings as
 * they are, anything else through String() — a value whose conversion throws (a Symbol in a
 * template, an object with a throwing toString) is shown by its type — and bounded as the
 * transport bounds a status message (statusMessage: 4096 characters, then "… (truncated)").
 * Never throws.
 */
export function shownName(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : String(value);
  } catch {
    text = `(a ${typeof value})`;
  }
  return statusMessage(text);
}
