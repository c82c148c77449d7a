/**
 * A landscape's task (docs/landscapes.md): its worker holds no credentials of the control plane, so
 * the core does there what a worker of the control plane's own cluster does itself. An Apply's
 * record is observed by the worker and written here before the worker may change a route; a
 * revert's record is read here and handed to the worker; the final status is the core's write.
 */
import { CancellationScope } from '@temporalio/workflow';
import type { LandscapeExecutorActivities } from '../../activities/execute-task.js';
import type { PlannedTask } from '../../activities/core.js';
import type { TaskInput } from '../../executors/types.js';
import { nothingRecordedMessage } from '../../decisions/landscape.js';
import { bookkeeping } from './bookkeeping-activities.js';

/**
 * How long a landscape's task waits for one of its workers to take it: a landscape with no worker
 * polling fails its task after this (under the plan's onFailure) instead of holding the Stage.
 * Half the task's timeout when that is shorter, so that this bound, which names the landscape,
 * ends the wait before the task's own timeout does.
 */
export const LANDSCAPE_START_SECONDS = 30;

export const landscapeStartSeconds = (task: PlannedTask) =>
  Math.max(1, Math.min(LANDSCAPE_START_SECONDS, Math.floor(task.timeoutSeconds / 2)));

/** Why a landscape's task was never taken up: the landscape and the queue, and what to do. */
export const notTakenMessage = (task: PlannedTask, queue: string) =>
  `no ${task.type} executor worker of Landscape ${task.landscape} took the task from task queue ${queue} within ` +
  `${landscapeStartSeconds(task)}s: start one in that landscape's cluster (docs/landscapes.md)`;

/** Runs even while the step is being cancelled: what a worker may have changed must stay recorded. */
const kept = <T>(fn: () => Promise<T>) => CancellationScope.nonCancellable(fn);

/**
 * The input the landscape's worker runs, with the record it needs written or read first; or the
 * message of a revert with nothing to put back (its Apply recorded nothing, so changed nothing).
 */
export async function landscapeInput(
  input: TaskInput,
  observeTask: LandscapeExecutorActivities['observeTask'],
  takenUp: string,
): Promise<TaskInput | { nothing: string }> {
  const { namespace, name } = input.execution;
  if (input.action === 'Revert') {
    if (!input.revertOf) return input;
    const record = await kept(() => bookkeeping.readExecutionRecord(namespace, input.revertOf!));
    if (!record) return { nothing: nothingRecordedMessage(input.revertOf) };
    return { ...input, record };
  }
  const rules = await observeTask(input);
  await kept(() =>
    bookkeeping.recordExecution({
      namespace,
      name,
      rules,
      ...(input.earlier ? { earlier: input.earlier } : {}),
      takenUp,
    }),
  );
  return { ...input, recorded: true };
}
