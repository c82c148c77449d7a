/**
 * Running the tasks of one plan step: an ActivationExecution per task, the executor's activity on its
 * own task queue with the registration's timeout, and the execution's status along the way.
 */
import { CancellationScope, isCancellation, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { ActivationActivities, PlannedTask } from '../../activities/core.js';
import type { TaskOutcome } from '../../decisions/activation.js';
import type { ExecutorActivities, LandscapeExecutorActivities } from '../../activities/execute-task.js';
import type { TaskInput } from '../../executors/types.js';
import type { StageVersionInfo } from '../../api/stage-version.js';
import type { TrafficAssignment } from '../../api/activation-execution.js';
import type { ActivationRef } from '../../shared/activation.js';
import { kubeTime as now } from '../../shared/format.js';
import { applyAssignment, weightOf } from '../../decisions/traffic.js';
import { executionName } from '../../shared/names.js';
import { executorTaskQueue } from '../../shared/task-queues.js';
import { causeOf, messageOf } from '../failures.js';
import { executorTask, externalExecution } from '../policies.js';
import { bookkeeping } from './bookkeeping-activities.js';
import { landscapeInput, landscapeStartSeconds, notTakenMessage } from './landscape-tasks.js';

export interface TaskContext {
  ref: ActivationRef;
  stage: string;
  vectorDeployment?: string;
  target: StageVersionInfo;
  previous?: StageVersionInfo;
  stageVersions: StageVersionInfo[];
  attempt: number;
  /** The executions of earlier attempts that ran, by `<step index>/<registration>`: a retried task may keep their record. */
  earlier?: Record<string, string>;
  /** Appended to executor task queue names, so that parallel test runs do not share workers. */
  queueSuffix?: string;
  /** A close-out's revert: only the rules nobody moved since are put back. */
  unmovedOnly?: boolean;
  /** With unmovedOnly: every assignment the activation's rounds made, any of which a rule may still hold. */
  unmovedAlso?: TrafficAssignment[];
  /** A progression's round: the weight every task gives the target (not the registration's own), and the round's number. */
  round?: { weight: number; index: number };
}

/**
 * A Worker executor's heartbeat timeout: short by default, since heartbeats are how a cancel, or
 * the end of the workflow, reaches the executor; by then it has stopped.
 */
export const heartbeatSecondsOf = (task: PlannedTask) =>
  task.heartbeatTimeoutSeconds ?? Math.min(5, task.timeoutSeconds);

/** Bookkeeping must happen even while the step is being cancelled. */
const record = <T>(fn: () => Promise<T>) => CancellationScope.nonCancellable(fn);

/** Why a task failed, and the reason the ActivationExecution carries (TimedOut/Cancelled: the core gave up on it). */
function failureOf(err: unknown, task: PlannedTask, queue: string): { reason: string; message: string } {
  if (isCancellation(err)) return { reason: 'Cancelled', message: 'cancelled: the activation was cancelled' };
  const cause = causeOf(err);
  if (cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START' && task.landscape)
    return { reason: 'NotTakenUp', message: notTakenMessage(task, queue) };
  if (cause instanceof TimeoutFailure) {
    const message =
      task.executor === 'External'
        ? `timed out after ${task.timeoutSeconds}s (the registration's timeoutSeconds) without a final status from the external executor`
        : `timed out after ${task.timeoutSeconds}s (the registration's timeoutSeconds); the executor was cancelled`;
    return { reason: 'TimedOut', message };
  }
  return { reason: 'Error', message: cause instanceof Error ? cause.message : String(cause) };
}

export type { TaskOutcome };

/** A succeeded execution's final status write made beside what follows it, settled into a value. */
export type Recording = Promise<{ execution: string; error?: unknown }>;

/** What the activation says of a Recording that failed (its firstError). */
export const unrecordedMessage = (recording: { execution: string; error?: unknown }) =>
  `the final status of ActivationExecution ${recording.execution} could not be written: ${messageOf(recording.error)}`;

/**
 * Runs one task: its ActivationExecution, the executor, the execution's final status. `beside`:
 * where a succeeded task leaves that last write instead of awaiting it, for the next step to run
 * meanwhile and check.
 */
export async function runTask(
  ctx: TaskContext,
  stepIndex: number,
  step: string,
  task: PlannedTask,
  action: 'Apply' | 'Revert',
  beside?: Recording[],
  /** Revert: the Apply execution whose record it puts back. */
  revertOf?: string,
): Promise<TaskOutcome> {
  const name = executionName(
    ctx.ref.name,
    stepIndex,
    task.registration,
    ctx.attempt,
    action === 'Revert',
    action === 'Apply' ? ctx.round?.index : 0,
  );
  // Apply: the traffic every rule the task manages holds afterwards, whatever it held before.
  const assignment =
    action === 'Apply'
      ? applyAssignment(ctx.target.name, ctx.previous?.name, ctx.round?.weight ?? weightOf(task.config))
      : undefined;
  const earlier = action === 'Apply' ? ctx.earlier?.[`${stepIndex}/${task.registration}`] : undefined;
  const ns = ctx.ref.namespace;
  const owned = task.executor === 'External' ? {} : { workerOwned: true };
  // A landscape's task goes to that landscape's workers (docs/landscapes.md).
  const queue = executorTaskQueue(task.type, task.landscape) + (ctx.queueSuffix ?? '');
  const runsOn = task.landscape ? `running on ${queue} (Landscape ${task.landscape})` : `running on ${queue}`;
  /** Records the execution Error with why `err` ended it, and says why. */
  const recordError = async (err: unknown) => {
    const { reason, message } = failureOf(err, task, queue);
    await record(() =>
      bookkeeping.writeExecutionStatus(ns, name, { phase: 'Error', reason, message, completionTime: now(), ...owned }),
    );
    return message;
  };
  try {
    await record(() =>
      bookkeeping.createExecution({
        name,
        activation: ctx.ref,
        registration: task.registration,
        type: task.type,
        step,
        action,
        stage: ctx.stage,
        stageVersion: ctx.target.name,
        ...(ctx.previous ? { previousStageVersion: ctx.previous.name } : {}),
        ...(assignment ? { assignment } : {}),
        ...(revertOf ? { revertOf } : {}),
        ...(ctx.vectorDeployment ? { vectorDeployment: ctx.vectorDeployment } : {}),
        config: task.config,
        timeoutSeconds: task.timeoutSeconds,
        // A Worker executor's Apply writes InProgress itself, with its record (one write fewer);
        // a revert, which records nothing, starts InProgress; an External execution Pending.
        ...(task.executor === 'External'
          ? { initial: 'Pending' as const }
          : action === 'Revert'
            ? { initial: { phase: 'InProgress' as const, message: runsOn, startTime: now() } }
            : { initial: 'none' as const }),
      }),
    );
  } catch (err) {
    // Not even its ActivationExecution could be made (a refused write): the task failed, and says why.
    return {
      registration: task.registration,
      execution: name,
      ok: false,
      message: `could not create ActivationExecution ${name}: ${failureOf(err, task, queue).message}`,
    };
  }
  try {
    let message: string;
    if (task.executor === 'External') {
      // The outside controller sets InProgress itself; we wait for its final phase.
      const { awaitExternalExecution } = proxyActivities<ActivationActivities>(
        externalExecution({
          timeoutSeconds: task.timeoutSeconds,
          summary: `wait for the ${task.type} controller to finish ${name}`,
        }),
      );
      const result = await awaitExternalExecution(ns, name);
      if (result.phase !== 'Succeeded')
        return {
          registration: task.registration,
          execution: name,
          ok: false,
          message: result.message || 'the external executor reported Error',
        };
      return { registration: task.registration, execution: name, ok: true, message: result.message };
    }
    const { executeTask, observeTask } = proxyActivities<ExecutorActivities & LandscapeExecutorActivities>(
      executorTask({
        taskQueue: queue,
        timeoutSeconds: task.timeoutSeconds,
        heartbeatSeconds: heartbeatSecondsOf(task),
        summary: `${action} ${task.registration} (${task.type}) for ${ctx.ref.name}`,
        ...(task.landscape ? { scheduleToStartSeconds: landscapeStartSeconds(task) } : {}),
      }),
    );
    const input: TaskInput = {
      execution: { namespace: ns, name },
      action,
      namespace: ns,
      stage: ctx.stage,
      stageVersion: ctx.target,
      ...(ctx.previous ? { previousStageVersion: ctx.previous } : {}),
      ...(assignment ? { assignment } : {}),
      ...(revertOf ? { revertOf } : {}),
      ...(revertOf && ctx.unmovedOnly
        ? { unmovedOnly: true, ...(ctx.unmovedAlso ? { unmovedAlso: ctx.unmovedAlso } : {}) }
        : {}),
      ...(earlier && earlier !== name ? { earlier } : {}),
      stageVersions: ctx.stageVersions,
      config: task.config,
      crossNamespaceAllowed: task.crossNamespaceAllowed,
    };
    const placed = task.landscape ? await landscapeInput(input, observeTask, runsOn) : input;
    const executed = 'nothing' in placed ? { message: placed.nothing } : await executeTask(placed);
    message = executed.message;
    // The executor wrote the final status itself; one of an earlier release leaves it to us.
    if (executed.completed) return { registration: task.registration, execution: name, ok: true, message };
    const written = record(() =>
      bookkeeping.writeExecutionStatus(ns, name, { phase: 'Succeeded', message, completionTime: now(), ...owned }),
    );
    // The outcome is known: the next step need not wait for the record of it (one status write
    // fewer on the activation's path per step).
    if (beside) {
      // Not recorded Succeeded for good: recorded Error instead (as when awaited here), so that it still ends final.
      const failed = (error: unknown) =>
        recordError(error).then(
          () => ({ execution: name, error }),
          () => ({ execution: name, error }),
        );
      beside.push(written.then(() => ({ execution: name }), failed));
    } else await written;
    return { registration: task.registration, execution: name, ok: true, message };
  } catch (err) {
    return { registration: task.registration, execution: name, ok: false, message: await recordError(err) };
  }
}
