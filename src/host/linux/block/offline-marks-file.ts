/**
 * The persisted offline marks of the Linux disk host (docs/linux-concept-map.md: a Linux block device
 * has no native offline state): one JSON file `{ "offline": OfflineMark[] }`, mode 0600, replaced
 * atomically and durably (src/state/atomic-file.ts). The only state the Linux block tools keep.
 */
import type { OfflineMark } from "./block-types.ts";
import { Code, CsiProxyError, failedPrecondition } from "../../../errors.ts";
import { readStateFile, writeFileAtomic } from "../../../state/atomic-file.ts";

export class OfflineMarksFile {
  readonly #stateFile: string;
  /** `stateFile`: an absolute path; its directory must exist when marks are written. */
  constructor(stateFile: string) {
    this.#stateFile = stateFile;
  }

  /**
   * The marks; none when the file does not exist. A file that cannot be read or parsed (torn,
   * planted garbage) is FailedPrecondition naming it: guessing would show an offline disk online.
   * Removing the file brings every disk back online.
   */
  async read(): Promise<OfflineMark[]> {
    let text: string | null;
    try {
      text = await readStateFile(this.#stateFile);
    } catch (e) {
      throw CsiProxyError.from(e, Code.FailedPrecondition);
    }
    if (text === null) return [];
    try {
      const parsed = JSON.parse(text) as { offline?: OfflineMark[] };
      return Array.isArray(parsed.offline) ? parsed.offline : [];
    } catch (e) {
      throw failedPrecondition(`disk offline-state file ${this.#stateFile} is not valid JSON (${(e as Error).message}): remove it (every disk then counts as online) or repair it`);
    }
  }

  /** Atomic and durable replace (src/state/atomic-file.ts): a crash leaves the old or the new marks. */
  async write(marks: OfflineMark[]): Promise<void> {
    await writeFileAtomic(this.#stateFile, JSON.stringify({ offline: marks }, null, 2) + "\n", { mode: 0o600 });
  }
}
