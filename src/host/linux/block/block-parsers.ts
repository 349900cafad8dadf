/**
 * Small parsers of what the kernel and the block tools print: device numbers (dev_t), `blkid -o
 * export` output, procfs' octal escapes and "name: number" fields of tool output. Pure functions.
 */
import type { DevNumber } from "./block-types.ts";
import { internal } from "../../../errors.ts";

/** glibc's gnu_dev_major/minor for a 64-bit dev_t. */
export function decodeDev(rdev: bigint): DevNumber {
  const major = Number(((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn));
  const minor = Number((rdev & 0xffn) | ((rdev >> 12n) & ~0xffn));
  return { major, minor };
}


/** Parses `blkid -p -o export` output (KEY=value lines). */
export function parseBlkidExport(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

/** The number a tool printed after a label, `re`'s first group ("Block count:   523244" → 523244n); Internal when missing. */
export function numberField(text: string, re: RegExp, what: string): bigint {
  const m = re.exec(text);
  if (!m) throw internal(`cannot find ${what} in tool output`);
  return BigInt(m[1]);
}
