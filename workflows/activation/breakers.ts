/**
 * The activation's wait at the CircuitBreakers (docs/scale.md): ask admitActivation before routing
 * changes; when told to wait, say so on the object, sleep a durable timer (the wait asked, bounded)
 * and ask again, until admitted or `stop()` (a cancel) is true. The Stage stays held meanwhile.
 */
import { condition } from '@temporalio/workflow';
import type { Admission } from '../../activities/core.js';
import { askAgainSeconds } from '../../decisions/breaker.js';
import type { ActivationRef } from '../../shared/activation.js';
import { bookkeeping } from './bookkeeping-activities.js';

/** A waiting activation asks again at least this often: a breaker closed by hand is noticed soon. */
export const BREAKER_ASK_AGAIN_SECONDS = 30;

export type GateOutcome = { admitted: true; limited: boolean } | { admitted: false };

export async function passBreakers(
  ref: ActivationRef,
  attempt: number,
  step: number,
  firstChange: boolean,
  onWait: (wait: Extract<Admission, { admitted: false }>) => Promise<void>,
  stop: () => boolean,
  maxWaitSeconds = BREAKER_ASK_AGAIN_SECONDS,
): Promise<GateOutcome> {
  let told = '';
  for (;;) {
    const answer = await bookkeeping.admitActivation(ref, attempt, step, firstChange);
    if (answer.admitted) return answer;
    // One status write per change of what the activation waits for, not one per ask.
    if (told !== `${answer.reason}: ${answer.message}`) {
      told = `${answer.reason}: ${answer.message}`;
      await onWait(answer);
    }
    if (await condition(stop, `${askAgainSeconds(answer.retryAfterSeconds, maxWaitSeconds)} seconds`))
      return { admitted: false };
  }
}
