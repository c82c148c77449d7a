/**
 * An activation's end and its letting go in one local activity: the final status (finishRun),
 * then, side by side, the Stage's lock given back and the close-out finalizer taken away. Done in
 * a workflow round of their own after the status, they cost the core the sandbox's calls for that
 * round, and the next activation waits for the lock through it.
 *
 * Letting go is best effort here, and bounded in time: what this activity could not let go, or not
 * within LET_GO_WITHIN_MS, it reports, and the workflow lets it go by its own path
 * (ActivationRun.letGo: the lock by Update, else by signal; the finalizer with the bookkeeping's
 * retries). So the outcome of this activity, and whether it is retried, rests on the status write
 * alone: a slow release never fails, nor repeats, a final status already written. A release the
 * lock did not answer in time goes by signal from the workflow at once, not by a second Update.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { LockActivities } from '../stage-lock/activities.js';
import { RELEASE_UNANSWERED } from '../stage-lock/contract.js';
import { within } from '../shared/within.js';
import type { CoreParts } from './parts.js';
import type { FinishRunInput } from './finish-run.js';

/**
 * How long the letting go may take here. A release is answered in about 20 ms (or given up on
 * after 500 ms), a finalizer goes in one request; well inside the local activity's attempt (30 s).
 */
export const LET_GO_WITHIN_MS = 3_000;

export interface FinishAndLetGoInput extends FinishRunInput {
  /** The Stage's lock to give back, when the attempt holds it: its requester (the workflow's id). */
  lock?: { requester: string };
  /** Whether the close-out finalizer is to be taken away. */
  finalizer?: boolean;
}

/**
 * The lock's release: given back (the lock answered); unanswered (the workflow releases by signal
 * now); or left to the workflow's own release (none asked for, it failed otherwise, or it was slow).
 */
export type LockRelease = 'givenBack' | 'unanswered' | 'toWorkflow';

export interface LetGoOutcome {
  /** Whether the final status was written (false: the VectorActivation is gone or being deleted). */
  written: boolean;
  lock: LockRelease;
  /** Whether the finalizer is off the object (or the object is gone); false when none was asked for. */
  finalizerRemoved: boolean;
}

type LetGoParts = Pick<CoreParts, 'removeCloseOutFinalizer'> &
  Pick<LockActivities, 'releaseStageLock'> & { finishRun(input: FinishRunInput): Promise<boolean> };

const unanswered = (err: unknown) => err instanceof ApplicationFailure && err.type === RELEASE_UNANSWERED;

export function finishAndLetGoActivities(parts: LetGoParts, letGoWithinMs = LET_GO_WITHIN_MS) {
  return {
    /**
     * Safe to repeat: finishRun is, a release by a requester that no longer holds the lock changes
     * nothing, and the finalizer is taken away only while it is there.
     */
    async finishAndLetGo({ lock, finalizer, ...finish }: FinishAndLetGoInput): Promise<LetGoOutcome> {
      const written = await parts.finishRun(finish);
      const { namespace } = finish.ref;
      const releasing: Promise<LockRelease> = lock
        ? parts.releaseStageLock(namespace, finish.stage, lock.requester).then(
            () => 'givenBack' as const,
            (err: unknown) => (unanswered(err) ? 'unanswered' : 'toWorkflow'),
          )
        : Promise.resolve('toWorkflow');
      const removing = finalizer
        ? parts.removeCloseOutFinalizer(finish.ref).then(
            () => true,
            () => false,
          )
        : Promise.resolve(false);
      const [lockRelease, finalizerRemoved] = await Promise.all([
        // Left running past the bound: a release or a finalizer removal is safe to repeat.
        within(releasing, letGoWithinMs, () => 'toWorkflow' as const),
        within(removing, letGoWithinMs, () => false),
      ]);
      return { written, lock: lockRelease, finalizerRemoved };
    },
  };
}

export type LetGoActivities = ReturnType<typeof finishAndLetGoActivities>;
