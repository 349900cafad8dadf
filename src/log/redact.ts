/**
 * Removing secrets from text (error messages, recorded argv, log lines): each whole occurrence of a
 * secret's value becomes `***`. An occurrence is whole when neither neighbouring character continues
 * a word (letters, digits, `_`) across it, so a short secret never mangles the words that merely
 * contain its letters: with the password "a", "bad password a" becomes "bad password ***".
 */
const WORD = /[\p{L}\p{N}_]/u;

/** `text` with every whole occurrence of each non-empty secret replaced by `***`. */
export function redactWhole(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...secrets].filter(Boolean).sort((a, b) => b.length - a.length)) {
    let result = "";
    let from = 0;
    for (let at = out.indexOf(secret); at >= 0; at = out.indexOf(secret, at + 1)) {
      if (at < from) continue;
      const before = at > 0 ? out[at - 1] : "";
      const after = out[at + secret.length] ?? "";
      const joinsBefore = before !== "" && WORD.test(before) && WORD.test(secret[0]);
      const joinsAfter = after !== "" && WORD.test(after) && WORD.test(secret[secret.length - 1]);
      if (joinsBefore || joinsAfter) continue;
      result += out.slice(from, at) + "***";
      from = at + secret.length;
    }
    out = result + out.slice(from);
  }
  return out;
}
