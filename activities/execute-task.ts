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
  type RuleRecord,
  type TaskInput,
  type TaskResult,
  type TrafficAssignment,
} from '../executors/types.js';
import { timeExecutorTask } from '../telemetry/metrics.js';
import { recordOf, recordOnce } from './traffic-record.js';
import { executionWrites } from './executions.js';
import { kubeTime } from '../shared/format.js';
import { unmovedRules } from '../decisions/traffic.js';
import { describeIssues } from '../api/issues.js';
import { nothingRecordedMessage } from '../decisions/landscape.js';
import type { ReportTarget } from './landscape-report.js';
import { reportRoutes, type RoutesReport } from './report-routes.js';

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

/**
 * The executor's activities. `landscape`: a worker in that Landscape's cluster, whose kubeConfig
 * reaches only that cluster: the core keeps its records (it observes, the core records, then it
 * writes; a revert is given the record) and writes the final status (docs/landscapes.md).
 */
export function createExecutorActivities(
  executor: Executor<any>,
  kubeConfig: k8s.KubeConfig,
  landscape?: string,
): ExecutorActivities | LandscapeExecutorActivities {
  if (landscape !== undefined) return landscapeActivities(executor, kubeConfig);
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

/** The task's configuration, validated and allowed where it writes; throws what no retry can fix. */
function checkedConfig(executor: Executor<any>, input: TaskInput): unknown {
  const parsed = executor.config.safeParse(input.config);
  if (!parsed.success) {
    const problems = describeIssues(parsed.error, ['spec']);
    throw ApplicationFailure.nonRetryable(`invalid ${executor.type} spec: ${problems}`, 'InvalidExecutorSpec');
  }
  const refused = crossNamespaceViolation(executor, parsed.data, input);
  if (refused) throw ApplicationFailure.nonRetryable(refused, 'CrossNamespaceRefused');
  return parsed.data;
}

/**
 * Runs `work` with the executor's context, heartbeating (heartbeats carry cancellation to this
 * activity) and its failure classified. One read of each route for observe and the write: what
 * observe read is what the write edits (a conflict reads again). The check after the write reads
 * the apiserver's answer to it (the route as stored, admission included): a read-back would find
 * the same. A writer after that is drift, which the Stage controller's watch of the routes reports.
 */
async function withExecutorContext<T>(kubeConfig: k8s.KubeConfig, work: (ctx: ExecutorContext) => Promise<T>) {
  const activity = Context.current();
  const ticker = setInterval(() => activity.heartbeat(), HEARTBEAT_MS);
  const ctx: ExecutorContext = {
    kubeConfig,
    signal: activity.cancellationSignal,
    heartbeat: (d) => activity.heartbeat(d),
    routes: new Map(),
  };
  try {
    return await work(ctx);
  } catch (err) {
    throw taskFailure(err);
  } finally {
    clearInterval(ticker);
  }
}

/** Puts `record` back, only its rules nobody moved since when the input asks (a close-out). */
async function restoreRecord(
  executor: Executor<any>,
  input: TaskInput,
  record: { rules: RuleRecord[]; assignment?: TrafficAssignment },
  config: unknown,
  ctx: ExecutorContext,
): Promise<TaskResult> {
  let rules = record.rules;
  if (input.unmovedOnly && record.assignment) {
    rules = unmovedRules(rules, await executor.observe(input, config, ctx, { lenient: true }), [
      record.assignment,
      ...(input.unmovedAlso ?? []),
    ]);
    if (rules.length === 0)
      return {
        message: `nothing to restore: every rule ActivationExecution ${input.revertOf} changed was moved since`,
      };
  }
  return executor.restore(input, rules, config, ctx);
}

/** Sets the rules to the assignment and checks they hold it. */
async function applyAssignment(
  executor: Executor<any>,
  input: TaskInput,
  config: unknown,
  ctx: ExecutorContext,
): Promise<TaskResult> {
  const assignment = input.assignment;
  if (!assignment) throw new ExecutorError('an Apply task without an assignment');
  ctx.signal.throwIfAborted();
  const result = await executor.route(input, assignment, config, ctx);
  const verified = await executor.verify(input, assignment, config, ctx);
  return verified ? { ...result, message: `${result.message}; ${verified}` } : result;
}

const nothingRecorded = (revertOf: string) => ({ message: nothingRecordedMessage(revertOf) });
const NO_APPLY_NAMED = { message: 'nothing to restore: no Apply execution named' };

function runTask(executor: Executor<any>, kubeConfig: k8s.KubeConfig) {
  const objects = new CustomObjects(kubeConfig);
  return async (input: TaskInput): Promise<TaskResult> => {
    const config = checkedConfig(executor, input);
    const { namespace, name } = input.execution;
    return withExecutorContext(kubeConfig, async (ctx) => {
      if (input.action === 'Revert') {
        if (!input.revertOf) return NO_APPLY_NAMED;
        const record = await recordOf(objects, namespace, input.revertOf);
        if (!record) return nothingRecorded(input.revertOf);
        return restoreRecord(executor, input, record, config, ctx);
      }
      // What the task manages, recorded before its first write: a revert puts exactly this back.
      await recordOnce(
        objects,
        namespace,
        name,
        () => executor.observe(input, config, ctx),
        input.earlier,
        `running on ${Context.current().info.taskQueue}`,
      );
      return applyAssignment(executor, input, config, ctx);
    });
  };
}

/**
 * A landscape worker's activities: nothing of the control plane is read or written here. An Apply
 * is two activities around the core's write of the record (observeTask, then executeTask with
 * `recorded`), so that the record is kept before any route changes, as on the control plane.
 */
function landscapeActivities(executor: Executor<any>, kubeConfig: k8s.KubeConfig) {
  return {
    /** What the managed rules hold now (the record to be), and nothing written. */
    async observeTask(input: TaskInput): Promise<RuleRecord[]> {
      const config = checkedConfig(executor, input);
      return withExecutorContext(kubeConfig, (ctx) => executor.observe(input, config, ctx));
    },

    /** What the managed rules of the Stages the core names hold: the landscape's report. */
    async reportRoutes(targets: ReportTarget[]): Promise<RoutesReport> {
      return withExecutorContext(kubeConfig, (ctx) => reportRoutes(executor, targets, ctx));
    },

    /** One attempt, timed and its failure counted by type; the core writes the final status. */
    async executeTask(input: TaskInput): Promise<ExecutedTask> {
      const done = timeExecutorTask(executor.type, input.action);
      try {
        const config = checkedConfig(executor, input);
        const result = await withExecutorContext(kubeConfig, async (ctx) => {
          if (input.action === 'Revert') {
            if (!input.revertOf) return NO_APPLY_NAMED;
            if (!input.record) return nothingRecorded(input.revertOf);
            return restoreRecord(executor, input, input.record, config, ctx);
          }
          if (input.recorded !== true)
            throw ApplicationFailure.nonRetryable(
              'an Apply task of a landscape needs its record written by the core first (observeTask, then the record): nothing was changed',
              'ExecutorError',
            );
          return applyAssignment(executor, input, config, ctx);
        });
        done('succeeded');
        return result;
      } catch (err) {
        const cancelled = Context.current().cancellationSignal.aborted;
        done(cancelled ? 'cancelled' : 'failed', taskErrorType(err, cancelled));
        throw err;
      }
    },
  };
}

/** What a control plane's executor worker runs (a landscape's also has observeTask: LandscapeExecutorActivities). */
export interface ExecutorActivities {
  executeTask(input: TaskInput): Promise<ExecutedTask>;
}
export type LandscapeExecutorActivities = ReturnType<typeof landscapeActivities>;
