/**
 * A close-out: the run before closed without finishing (terminated, timed out, failed), or its
 * object is being deleted with that run gone. Its executions end first, then, with the Stage held
 * again, what its tasks changed is put back under onFailure Revert (only rules nobody moved since),
 * and the activation ends Failed saying why. ADR-0012's order: executions, revert, usage, then the
 * Stage.
 */
import { isCancellation, sleep } from '@temporalio/workflow';
import { closedOutProgress, failureEnding, lastRanStep, type Ending } from '../../decisions/activation.js';
import { progressionWeights } from '../../decisions/progression.js';
import { applyAssignment } from '../../decisions/traffic.js';
import { executionName } from '../../shared/names.js';
import { messageOf } from '../failures.js';
import { bookkeeping } from './bookkeeping-activities.js';
import type { ActivationRun } from './run.js';
import { heartbeatSecondsOf } from './tasks.js';

export interface CloseOutCause {
  reason: string;
  message: string;
}

export async function closeOut(run: ActivationRun, why: CloseOutCause): Promise<Ending> {
  const { ref, va, access, reporter, holder } = run;
  reporter.noteError(why.message);
  // The run before set the finalizer, and may have marked the StageVersion; only the holder's mark is taken away.
  run.holdings.takeOverRunBefore(va.stageVersion);
  // Without the Stage (gone, or a newer activation has it), the run before's Lease goes too.
  const ended = async (state: string) => {
    await bookkeeping.releaseStageLease(ref.namespace, va.stage, holder);
    return run.finish({ phase: 'Failed', reason: why.reason, message: `${why.message}; ${state}` });
  };
  try {
    await bookkeeping.endExecutions(ref, why.message);
    let before;
    try {
      before = await bookkeeping.describeStage(ref.namespace, va.stage, va.stageVersion, { puttingBack: true });
    } catch (err) {
      return await ended(`nothing was put back: ${messageOf(err)}`);
    }
    const lock = await access.acquire(
      before.target.revision,
      () => false,
      () =>
        reporter.report(
          'Waiting',
          'WaitingForStage',
          `closing out: waiting for Stage ${va.stage} (lock ${access.lockId})`,
        ),
    );
    if (lock !== 'granted')
      return await ended(`nothing was put back: the newer activation ${access.supersededBy} sets the routes`);
    try {
      return await closeOutWithStage(run, why, before.stageUid);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const message = `${why.message}; the close-out failed: ${messageOf(err)}`;
      return await run.finish({ phase: 'Failed', reason: why.reason, message });
    }
  } finally {
    await run.letGo();
  }
}

async function closeOutWithStage(run: ActivationRun, why: CloseOutCause, stageUid: string): Promise<Ending> {
  const { ref, va, reporter, progress, steps } = run;
  const read = {
    stageVersion: va.stageVersion,
    ...(va.executionPlan ? { executionPlan: va.executionPlan } : {}),
    puttingBack: true,
  };
  const onLeaseHeld = (message: string) => reporter.report('Waiting', 'WaitingForLease', message);
  const { plan, stage } = await run.access.takeStage(stageUid, read, onLeaseHeld);
  reporter.notePrevious(stage.stageVersions.find((sv) => sv.name === va.status.previousStageVersion));
  // The run before's executor activities stop at their next heartbeat, which fails once it has closed.
  const tasks = plan.steps.flatMap((step) => step.tasks.filter((task) => task.executor !== 'External'));
  if (tasks.length > 0) await sleep(`${Math.max(...tasks.map(heartbeatSecondsOf))} seconds`);
  const { attempt } = progress;
  // A progression's rounds each made executions of their own: the latest one recorded of each
  // task is where its traffic stands (every round keeps the record of the one before).
  const weights = plan.progression ? progressionWeights(plan.progression) : [];
  const rounds = Math.max(weights.length, 1);
  const names = (i: number, registration: string) =>
    Array.from({ length: rounds }, (_, round) => executionName(ref.name, i, registration, attempt, false, round));
  const allNames = plan.steps.flatMap((step, i) => step.tasks.flatMap((task) => names(i, task.registration)));
  const recorded = new Set(await bookkeeping.recordedExecutions(ref.namespace, allNames));
  const latestRecorded = (i: number, registration: string) =>
    [...names(i, registration)].reverse().find((name) => recorded.has(name)) ?? names(i, registration)[0]!;
  const executions = plan.steps.map((step, i) => step.tasks.map((task) => latestRecorded(i, task.registration)));
  progress.steps = closedOutProgress(plan, progress.steps, executions, recorded);
  const last = lastRanStep(progress.steps);
  if (last < 0)
    return run.finish({ phase: 'Failed', reason: why.reason, message: `${why.message}; no step had changed a route` });
  steps.closesOutRouting();
  const previous = reporter.previous?.name;
  const unmovedAlso = weights.map((weight) => applyAssignment(va.stageVersion, previous, weight));
  const ctx = run.taskContext(stage, { unmovedOnly: true, ...(weights.length ? { unmovedAlso } : {}) });
  const revert = plan.onFailure === 'Revert' ? await steps.revertSteps(plan, ctx, last) : undefined;
  const ending = failureEnding({
    step: plan.steps[last]!.name,
    firstError: why.message,
    onFailure: plan.onFailure,
    ...(revert ? { revert } : {}),
    progress: progress.steps,
    recorded: [...recorded],
  });
  return run.finish({ ...ending, reason: why.reason });
}
