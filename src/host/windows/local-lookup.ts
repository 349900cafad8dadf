/**
 * The Windows counterpart of the Linux cached lookup (FilesystemHostApi.lookupCached): answers on the
 * JS thread, without a thread-pool hop, whether a lexically normalised drive-letter path exists with
 * no link before its final component, by asking GetFileAttributesExW for each component from the
 * drive root down.
 *
 * Bounds (Windows has no "answer from the caches only" query like Linux's RESOLVE_CACHED):
 * - only on a drive whose root GetDriveTypeW reports DRIVE_FIXED (a local disk: never a network,
 *   removable or optical drive; learned off the JS thread on the drive's first lookup, which answers
 *   undefined meanwhile);
 * - never past a reparse point (symlink, junction, volume mount point or any other tag): the walk
 *   stops there and answers undefined, so it never reaches a network share or another volume through
 *   a link;
 * - only components Win32 passes through unchanged (no trailing dot or space, no DOS device name,
 *   a conservative character set), so the entry queried is the entry named;
 * - a lookup slower than {@link SLOW_LOOKUP_MS} (a busy or failing local disk) turns the fast path off
 *   for {@link PAUSE_MS}: a stalled disk stalls the JS thread at most once per pause, not per call.
 * Answers: "present" = every component exists, none before the final one is a reparse point (the
 * final one may be one: it is not followed); "absent" = a component is missing (or one before the
 * final is a file) and none before it is a reparse point; undefined = cannot tell (ask the host's
 * lstat/realpath). Never throws.
 */

/** GetFileAttributesExW's answer: the attributes, "missing" (FILE/PATH_NOT_FOUND) or "unknown" (any other error). */
export type LocalAttributes = (path: string) => number | "missing" | "unknown";

export interface LocalLookupDeps {
  /** Synchronous, on the JS thread (see the bounds above). */
  attributes: LocalAttributes;
  /** Whether `root` (`X:\`) is a fixed local drive; may block, so it runs off the JS thread. */
  isFixedDrive: (root: string) => Promise<boolean>;
  /** Monotonic milliseconds (performance.now by default). */
  nowMs?: () => number;
}

/** A lookup slower than this (milliseconds) pauses the fast path. */
export const SLOW_LOOKUP_MS = 50;
/** How long (milliseconds) the fast path stays off after a slow lookup. */
export const PAUSE_MS = 60_000;

const FILE_ATTRIBUTE_DIRECTORY = 0x10;
const FILE_ATTRIBUTE_REPARSE_POINT = 0x400;
/** Characters Win32 keeps as they are in a file name (a space or dot only inside: see below). */
const PLAIN_COMPONENT = /^[A-Za-z0-9_~$\-+@#'()[\]{}!,=%&;^][A-Za-z0-9_~$\-+@#'()[\]{}!,=%&;^. ]*$/;
/** DOS device names, reserved in every directory with or without an extension. */
const DEVICE_NAME = /^(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(?:\..*)?$/i;

const plain = (c: string) => PLAIN_COMPONENT.test(c) && !c.endsWith(".") && !c.endsWith(" ") && !DEVICE_NAME.test(c);

/** Creates the lookup (see the module comment). */
export function createLocalLookup(deps: LocalLookupDeps): (path: string) => "present" | "absent" | undefined {
  const now = deps.nowMs ?? (() => performance.now());
  /** Per drive letter (upper case): true/false once known, null while GetDriveTypeW runs. */
  const fixed = new Map<string, boolean | null>();
  let pausedUntil = -Infinity;

  const walk = (drive: string, parts: string[]): "present" | "absent" | undefined => {
    let cur = drive;
    for (let i = 0; i < parts.length; i++) {
      cur += "\\" + parts[i];
      const a = deps.attributes(cur);
      if (a === "unknown") return undefined;
      if (a === "missing") return "absent";
      if (i === parts.length - 1) return "present";
      if (a & FILE_ATTRIBUTE_REPARSE_POINT) return undefined;
      if (!(a & FILE_ATTRIBUTE_DIRECTORY)) return "absent"; // a file in the middle: nothing below it
    }
    return undefined; // the drive root itself: not asked about
  };

  return (p) => {
    try {
      const m = /^([A-Za-z]):\\(.+)$/.exec(p);
      if (!m) return undefined;
      const letter = m[1].toUpperCase();
      const known = fixed.get(letter);
      if (known === undefined) {
        fixed.set(letter, null);
        deps.isFixedDrive(`${letter}:\\`).then(
          (f) => void fixed.set(letter, f),
          () => void fixed.set(letter, false),
        );
        return undefined;
      }
      if (known !== true) return undefined;
      const parts = m[2].split("\\");
      if (!parts.every(plain)) return undefined;
      const t0 = now();
      if (t0 < pausedUntil) return undefined;
      const answer = walk(`${m[1]}:`, parts);
      if (now() - t0 > SLOW_LOOKUP_MS) pausedUntil = now() + PAUSE_MS;
      return answer;
    } catch {
      return undefined;
    }
  };
}
