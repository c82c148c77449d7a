/**
 * The activity every executor worker registers (`executeTask`, on konfidence-executor-<type>):
 * validates the configuration, checks tenancy, records what the managed rules hold, sets them to
 * the task's assignment and verifies it (Apply), or puts the record of an Apply back (Revert); it
 * heartbeats so that a timeout or a cancelled activation reaches the executor and stops it.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { apiStatus, type k8s } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { apiError } from '../executors/routes.js';
import {
  ExecutorError,
  type Executor,
  type ExecutorContext,
  type TaskInput,
  type TaskResult,
} from '../executors/types.js';
import { timeExecutorTask } from '../telemetry/metrics.js';
import { recordOf, recordOnce } from './traffic-record.js';
import { executionWrites } from './executions.js';
import { kubeTime } from '../shared/format.js';
import { unmovedRules } from '../decisions/traffic.js';
import { describeIssues } from '../api/issues.js';

const HEARTBEAT_MS = 1_000;

/**
 * Why this task may not run, or undefined when it may: executors write with cluster-wide rights, so
 * a task that would write outside the activation's namespace needs the registration's consent (the
 * core checks it too; this is the executor side of the same rule, before any write).
 */
export function crossNamespaceViolation<Config>(
  executor: Executor<Config>,
  config: Config,
  input: TaskInput,
): string | undefined {
  if (input.crossNamespaceAllowed === true) return undefined;
  const outside = executor.routeNamespaces(config, input.namespace).filter((ns) => ns !== input.namespace);
  if (!outside.length) return undefined;
  const registration = input.registration
    ? `ActivationTaskRegistration ${input.registration}`
    : 'the ActivationTaskRegistration';
  return (
    `refused: this ${executor.type} task of an activation in namespace ${input.namespace} would change routes in namespace ` +
    `${outside.join(', ')}; only namespaces listed in spec.allowCrossNamespaceFrom of ${registration} may do that ` +
    `(a platform administrator adds "${input.namespace}" there, or the registration names routes in ${input.namespace} only)`
  );
}

/**
 * What Temporal should do with an executor's error: an ExecutorError that says no retry can help,
 * or a Kubernetes API refusal (4xx other than 409 conflict and 429 throttling), ends the task at
 * once; anything else is retried within the registration's timeout.
 */
export function taskFailure(err: unknown): unknown {
  const classified = apiStatus(err) !== undefined ? apiError(err, 'Kubernetes API') : err;
  if (classified instanceof ExecutorError && !classified.retryable)
    return ApplicationFailure.nonRetryable(classified.message, 'ExecutorError');
  return classified;
}

/** The error type the metrics count: the failure type the workflow sees, or what stopped the task. */
export function taskErrorType(failure: unknown, cancelled: boolean): string {
  if (cancelled) return 'Cancelled';
  if (failure instanceof ApplicationFailure) return failure.type ?? 'ApplicationFailure';
  return failure instanceof ExecutorError ? 'ExecutorError' : 'Error';
}

/** What the core hears of a task that succeeded. */
export interface ExecutedTask extends TaskResult {
  /**
   * The executor wrote the execution's final status (Succeeded) itself, so the core writes none.
   * Absent from an executor of an earlier release, which leaves that write to the core.
   */
  completed?: boolean;
}

export function createExecutorActivities(executor: Executor<any>, kubeConfig: k8s.KubeConfig) {
  const run = runTask(executor, kubeConfig);
  const { writeExecutionStatus } = executionWrites(new CustomObjects(kubeConfig));
  return {
    /** One attempt, timed and its failure counted by type (docs/observability.md). */
    async executeTask(input: TaskInput): Promise<ExecutedTask> {
      const done = timeExecutorTask(executor.type, input.action);
      try {
        const result = await run(input);
        // The outcome is recorded where it happened, in the same activity: the core's path loses a
        // write per task. A final status is final (the CRD refuses a change of it), so a repeat of
        // this activity, or the core giving up on it meanwhile, leaves whichever came first.
        const { namespace, name } = input.execution;
        await writeExecutionStatus(namespace, name, {
          phase: 'Succeeded',
          message: result.message,
          completionTime: kubeTime(),
          workerOwned: true,
        }).catch((err: unknown) => {
          throw taskFailure(err);
        });
        done('succeeded');
        return { ...result, completed: true };
      } catch (err) {
        const cancelled = Context.current().cancellationSignal.aborted;
        done(cancelled ? 'cancelled' : 'failed', taskErrorType(err, cancelled));
        throw err;
      }
    },
  };
}

function runTask(executor: Executor<any>, kubeConfig: k8s.KubeConfig) {
  const objects = new CustomObjects(kubeConfig);
  return async (input: TaskInput): Promise<TaskResult> => {
    const activity = Context.current();
    const parsed = executor.config.safeParse(input.config);
    if (!parsed.success) {
      const problems = describeIssues(parsed.error, ['spec']);
      throw ApplicationFailure.nonRetryable(`invalid ${executor.type} spec: ${problems}`, 'InvalidExecutorSpec');
    }
    const refused = crossNamespaceViolation(executor, parsed.data, input);
    if (refused) throw ApplicationFailure.nonRetryable(refused, 'CrossNamespaceRefused');
    // Heartbeats carry cancellation to this activity; keep them flowing while the executor works.
    const ticker = setInterval(() => activity.heartbeat(), HEARTBEAT_MS);
    // One read of each route for observe and the write: what observe read is what the write edits
    // (a conflict reads again). The check after the write reads the apiserver's answer to it (the
    // route as stored, admission included): a read-back would find the same. A writer after that
    // is drift, which the Stage controller's watch of the routes reports.
    const ctx: ExecutorContext = {
      kubeConfig,
      signal: activity.cancellationSignal,
      heartbeat: (d) => activity.heartbeat(d),
      routes: new Map(),
    };
    const { namespace, name } = input.execution;
    try {
      if (input.action === 'Revert') {
        if (!input.revertOf) return { message: 'nothing to restore: no Apply execution named' };
        const record = await recordOf(objects, namespace, input.revertOf);
        if (!record)
          return {
            message: `nothing to restore: ActivationExecution ${input.revertOf} recorded nothing, so it changed no route`,
          };
        let rules = record.rules;
        if (input.unmovedOnly && record.assignment) {
          rules = unmovedRules(rules, await executor.observe(input, parsed.data, ctx, { lenient: true }), [
            record.assignment,
            ...(input.unmovedAlso ?? []),
          ]);
          if (rules.length === 0)
            return {
              message: `nothing to restore: every rule ActivationExecution ${input.revertOf} changed was moved since`,
            };
        }
        return await executor.restore(input, rules, parsed.data, ctx);
      }
      const assignment = input.assignment;
      if (!assignment) throw new ExecutorError('an Apply task without an assignment');
      // What the task manages, recorded before its first write: a revert puts exactly this back.
      await recordOnce(
        objects,
        namespace,
        name,
        () => executor.observe(input, parsed.data, ctx),
        input.earlier,
        `running on ${activity.info.taskQueue}`,
      );
      ctx.signal.throwIfAborted();
      const result = await executor.route(input, assignment, parsed.data, ctx);
      const verified = await executor.verify(input, assignment, parsed.data, ctx);
      return verified ? { ...result, message: `${result.message}; ${verified}` } : result;
    } catch (err) {
      throw taskFailure(err);
    } finally {
      clearInterval(ticker);
    }
  };
}

export type ExecutorActivities = ReturnType<typeof createExecutorActivities>;
