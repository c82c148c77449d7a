/**
 * The abort's way back: down through the plan's abort weights first (each for its interval, the
 * Stage's Lease taken once for it), then what every task recorded before the activation is put
 * back. A Stage gone meanwhile skips the rest of the ramp. Ends Failed saying why and what was put
 * back, or StageDeleted.
 */
import { condition } from '@temporalio/workflow';
import { ABORT_RAMP_INTERVAL_SECONDS } from '../../api/progression-defaults.js';
import { stoppedEnding, type Ending } from '../../decisions/activation.js';
import { leaseSecondsOver } from '../../decisions/progression.js';
import type { Progression } from './progression.js';

export async function goBack(progression: Progression, reason: string, why: string, ramp: number[]): Promise<Ending> {
  const { host, spec } = progression;
  const interval = spec.abort?.intervalSeconds ?? ABORT_RAMP_INTERVAL_SECONDS;
  for (const weight of ramp) {
    // The Stage gone while the traffic goes back: the rest of the ramp is skipped, the record put back at once.
    if (!(await host.stageStillOurs())) break;
    await progression.writeStatus(
      'Aborting',
      `${why}; going back: ${weight} % to the new StageVersion for ${interval}s`,
    );
    const failed = await progression.roundAt(weight, true, false);
    if (failed)
      return { ...failed, message: `${why}; going back, the weight ${weight} % could not be set: ${failed.message}` };
    await host.holdLease(leaseSecondsOver(interval * 1000));
    await condition(() => host.requests.stageLost !== undefined, `${interval} seconds`);
    await host.holdLease(undefined);
  }
  await progression.writeStatus('Aborting', `${why}; putting the traffic back as recorded before the activation`);
  const restored = await host.restore();
  progression.wentBack(restored);
  const state =
    restored === 'done'
      ? 'the traffic is back as recorded before the activation'
      : 'the traffic could not all be put back: see the steps';
  const { stageLost } = host.requests;
  if (stageLost) return stoppedEnding(`while going back (${why})`, { stageLost }, state);
  return { phase: 'Failed', reason, message: `${why}; ${state}` };
}
