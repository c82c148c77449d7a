/**
 * An activation's end and its letting go in one local activity: the final status (finishRun),
 * then, side by side, the Stage's lock given back and the close-out finalizer taken away. The
 * workflow would otherwise let them go in a round of its own after the status: each round costs
 * the core the sandbox's calls for it, and the next activation waits for the lock through it.
 *
 * Letting go is best effort here: what this activity could not let go it reports, and the workflow
 * lets it go by its own path (ActivationRun.letGo: the lock by Update, else by signal; the
 * finalizer with the bookkeeping's retries). So a failed release never fails the final status. A
 * release the lock did not answer in time goes by signal from the workflow at once, as after
 * releaseStageLock, not by a second Update.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { LockActivities } from '../stage-lock/activities.js';
import { RELEASE_UNANSWERED } from '../stage-lock/contract.js';
import type { CoreParts } from './parts.js';
import type { FinishRunInput } from './finish-run.js';

export interface FinishAndLetGoInput extends FinishRunInput {
  /** The Stage's lock to give back, when the attempt holds it: its requester (the workflow's id). */
  lock?: { requester: string };
  /** Whether the close-out finalizer is to be taken away. */
  finalizer?: boolean;
}

export interface LetGo {
  /** Whether the final status was written (false: the VectorActivation is gone or being deleted). */
  written: boolean;
  /**
   * The lock: given back (it answered the release); unanswered (the workflow releases by signal
   * now); or left to the workflow's own release (none asked for, or the release failed otherwise).
   */
  lock: 'givenBack' | 'unanswered' | 'left';
  /** Whether the finalizer is off the object (or the object is gone); false when none was asked for. */
  finalizerRemoved: boolean;
}

type LetGoParts = Pick<CoreParts, 'removeCloseOutFinalizer'> &
  Pick<LockActivities, 'releaseStageLock'> & { finishRun(input: FinishRunInput): Promise<boolean> };

const settled = (work: Promise<unknown>) =>
  work.then(
    () => true,
    () => false,
  );

const unanswered = (err: unknown) => err instanceof ApplicationFailure && err.type === RELEASE_UNANSWERED;

export function finishAndLetGoActivities(parts: LetGoParts) {
  return {
    /**
     * Safe to repeat: finishRun is, a release by a requester that no longer holds the lock changes
     * nothing, and the finalizer is taken away only while it is there.
     */
    async finishAndLetGo({ lock, finalizer, ...finish }: FinishAndLetGoInput): Promise<LetGo> {
      const written = await parts.finishRun(finish);
      const { namespace } = finish.ref;
      const releasing = lock
        ? parts.releaseStageLock(namespace, finish.stage, lock.requester).then(
            () => 'givenBack' as const,
            (err: unknown) => (unanswered(err) ? ('unanswered' as const) : ('left' as const)),
          )
        : ('left' as const);
      const [lockOutcome, finalizerRemoved] = await Promise.all([
        releasing,
        finalizer ? settled(parts.removeCloseOutFinalizer(finish.ref)) : false,
      ]);
      return { written, lock: lockOutcome, finalizerRemoved };
    },
  };
}

export type LetGoActivities = ReturnType<typeof finishAndLetGoActivities>;
