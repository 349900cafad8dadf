import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, CsiProxyError } from "../../errors.ts";
import { MAX_PASSWORD_BYTES, MAX_USERNAME_BYTES, validateCredentials } from "./credentials.ts";

const refused = (username: string, password: string, message: RegExp) =>
  assert.throws(
    () => validateCredentials(username, password),
    (e) => e instanceof CsiProxyError && e.code === Code.InvalidArgument && message.test(e.message) && (password === "" || !e.message.includes(password)),
  );

test("accepts the longest names and passwords, and empty ones (no credential)", () => {
  validateCredentials("DOMAIN\\user", "Pa55 w0rd!\t");
  validateCredentials("é".repeat(MAX_USERNAME_BYTES / 2), "x".repeat(MAX_PASSWORD_BYTES));
  validateCredentials("", "");
});

test("refuses too long, control characters in a name, NUL/CR/LF in a password; never echoes the password", () => {
  refused("u".repeat(MAX_USERNAME_BYTES + 1), "", /username is longer than 1024 bytes/);
  refused("é".repeat(MAX_USERNAME_BYTES / 2) + "u", "", /username is longer/);
  refused("us\ner", "", /username .* contains control characters/);
  refused("user", "p".repeat(MAX_PASSWORD_BYTES + 1), /password is longer than 1024 bytes/);
  for (const c of ["\0", "\r", "\n"]) refused("user", `sec${c}ret-9`, /password contains a NUL, CR or LF character/);
});
