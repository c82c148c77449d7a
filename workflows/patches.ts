/**
 * Every `patched()` id the workflows use: what the new branch changed, and the release that first
 * had it. An unversioned core worker replays every open workflow on its own code, so a change to
 * the commands a workflow issues keeps its old branch behind an id. An upgrade is supported from
 * the release before (docs/scale.md, "The upgrade window"): a release drops the ids that the
 * release before it already had, with their replay fixtures. A Stage lock lives on through
 * continue-as-new, so a lock id may go only once every lock has continued as new or finished on a
 * build with it, which the release before guarantees (an idle lock finishes within 10 s).
 * test/unit/patches.test.ts keeps this list and the code's `patched()` calls in step.
 */
export type Workflow = 'activation' | 'stage-lock';

export interface Patch {
  workflow: Workflow;
  /** What the new branch does instead of the old one. */
  changed: string;
  /** The release that first has it (the old branch goes in the release after next). */
  release: string;
}

/** None yet: 0.1.0 is the first release, and every workflow since has run on its code. */
export const PATCHES: Record<string, Patch> = {};
