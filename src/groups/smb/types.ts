import type { CallOptions } from "../../util/call-scope.ts";
/**
 * Version-agnostic SMB API. Mappings are per share root (`\\server\share`, case-insensitive) and
 * reference-counted: a mapping is torn down only when its last user removes it.
 * The password is a secret: never logged, never on a command line.
 */
export interface SmbService {
  /** Maps the share of remotePath (reusing a healthy mapping) and, when localPath is set, links localPath to remotePath. */
  newSmbGlobalMapping(req: { remotePath: string; localPath: string; username: string; password: string }, options?: CallOptions): Promise<void>;
  /** Releases one use of the share of remotePath; the mapping goes when no use is left. Unknown share: NotFound. */
  removeSmbGlobalMapping(req: { remotePath: string }, options?: CallOptions): Promise<void>;
}
