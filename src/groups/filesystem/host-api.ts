/** What is at a path, without following a final symlink. */
export type EntryKind = "file" | "directory" | "symlink" | "other";

/** Options of the recursive deletes. */
export interface RemoveOptions {
  /**
   * Aborting it stops the delete within one second: nothing new starts, the call settles once what
   * was in flight has, rejecting with the signal's code (DeadlineExceeded/Cancelled) and what was removed.
   */
  signal?: AbortSignal;
}

/**
 * Host operations of the filesystem group. Implementations validate nothing and decide nothing
 * (filesystem-service.ts and policy/path-policy.ts do). Paths are absolute and already checked; the
 * one refusal a host makes on its own is at the moment of acting: the Linux host works through
 * directory handles opened without following links (host/linux/dir-handle.ts), so a checked
 * directory swapped for a link meanwhile makes the call fail (FailedPrecondition), never act elsewhere.
 * Errors carry codes: missing path NotFound, existing AlreadyExists, non-empty FailedPrecondition,
 * access PermissionDenied.
 */
export interface FilesystemHostApi {
  /** Kind of the entry at `path`, or null when nothing is there. */
  lstat(path: string): Promise<EntryKind | null>;
  /**
   * Optional, synchronous and bounded: answers from the kernel's caches alone, never waiting for
   * I/O, a network or FUSE filesystem or a lock (Linux: openat2 RESOLVE_CACHED, cached-lookup.ts).
   * For an absolute, lexically normalised `path`: "present" = it exists and no component before the
   * final one is a link; "absent" = a component is missing and none before it is a link; undefined
   * = the caches cannot tell now (ask `lstat`/`realpath`). Never throws.
   */
  lookupCached?(path: string): "present" | "absent" | undefined;
  /** Real path (all symlinks resolved) of an existing path, or null when it does not exist. */
  realpath(path: string): Promise<string | null>;
  /** Creates the directory and its parents (0755); an existing directory is fine. */
  mkdirAll(path: string): Promise<void>;
  /** Removes one empty directory (or a symlink to one), non-recursively. */
  removeDir(path: string): Promise<void>;
  /**
   * Removes `path` recursively without following symlinks (a link is removed itself) and without
   * entering mount points (FailedPrecondition, see the platform hosts); a missing path is fine.
   * Bounded descriptors and memory whatever the depth; settles only after all of its work has stopped;
   * a failure says how much was removed and what is left.
   */
  removeAll(path: string, options?: RemoveOptions): Promise<void>;
  /** Removes everything inside the directory `path` under removeAll's rules; missing `path` NotFound. */
  removeContents(path: string, options?: RemoveOptions): Promise<void>;
  /** Names of the entries of a directory. */
  readDir(path: string): Promise<string[]>;
  /** Creates a symlink at `linkPath` whose target is `target` (a directory link when target is a directory). */
  symlink(target: string, linkPath: string): Promise<void>;
  /** For a symlink: whether what it finally points to exists. */
  linkTargetExists(path: string): Promise<boolean>;
  /** Whether a filesystem is mounted exactly at `path` (a Windows volume mount point, a Linux mount). */
  isMountPoint(path: string): Promise<boolean>;
}
