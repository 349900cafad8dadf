/**
 * Tests that may skip themselves in CI (CI=true, root, every tool of scripts/install-host-tools.sh
 * installed), each with the reason it cannot run there. Any other skip fails the run
 * (check-skips.ts): a suite that silently stops running is a suite that stopped testing.
 */
export interface AllowedSkip {
  /** Test file, relative to the repository root. */
  file: string;
  /** The skipped test's or suite's name, exactly. */
  name: string;
  /** Why CI cannot run it. */
  why: string;
}

export const allowedSkips: AllowedSkip[] = [];
