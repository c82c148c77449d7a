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

export const PATCHES: Record<string, Patch> = {
  'stage-checks': {
    workflow: 'activation',
    changed:
      "reads the Stage before every route write but an attempt's first, and when a gate or a measurement wakes the run; ends StageDeleted when it is gone",
    release: '0.2.0',
  },
  'first-write-taken': {
    workflow: 'activation',
    changed:
      "a new activation's first status write is its first news (InProgress, Waiting, or its ending), without Pending before it",
    release: '0.2.0',
  },
  'stage-read-stands': {
    workflow: 'activation',
    changed:
      "a later step's route write reads the Stage only when the last read of it is a second old or more (STAGE_READ_STANDS_MS)",
    release: '0.2.0',
  },
  'gone-records': {
    workflow: 'activation',
    changed:
      'a revert tells an execution deleted with its record (nothing of it put back: the revert is partial) from one that recorded nothing',
    release: '0.2.0',
  },
  'finish-lets-go': {
    workflow: 'activation',
    changed:
      "the final status's local activity gives the Stage's lock back and takes the close-out finalizer away after the write (finishAndLetGo), instead of a workflow round after it",
    release: '0.2.0',
  },
};
