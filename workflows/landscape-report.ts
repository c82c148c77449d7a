/**
 * A Landscape's reports (docs/landscapes.md): one workflow per Landscape, on the core's queue, asks
 * the landscape's workers of each executor type what the managed rules of its Stages hold, every
 * interval, and writes the answers into the Landscape's status, where the Stage controller reads
 * them. A report that no worker takes within the interval, or that fails, keeps the last one and
 * says why. Its state is the Landscape's status, read each round: nothing is carried across
 * continue-as-new, and a Landscape recreated under the same name starts afresh. Ends when the
 * Landscape is gone; continues as new before its history grows long.
 */
import {
  continueAsNew,
  proxyActivities,
  setCurrentDetails,
  setWorkflowOptions,
  sleep,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { ActivationActivities } from '../activities/core.js';
import type { ReportTarget } from '../activities/landscape-report.js';
import type { LandscapeExecutorActivities } from '../activities/execute-task.js';
import { nextReports, type ReportAnswer } from '../decisions/landscape.js';
import { kubeTime } from '../shared/format.js';
import { executorTaskQueue } from '../shared/task-queues.js';
import { causeOf, messageOf } from './failures.js';
import { LANDSCAPE_REPORT_BOOKKEEPING } from './policies.js';

export interface LandscapeReportInput {
  landscape: string;
  /** How often the workers are asked, and how long a report may take to be taken and to run. */
  intervalSeconds: number;
  /** Appended to the executor task queues (tests run systems side by side on one server). */
  queueSuffix?: string;
}

/** Rounds before the workflow continues as new, whatever its history's size. */
const ROUNDS_PER_RUN = 100;

const core =
  proxyActivities<Pick<ActivationActivities, 'landscapeReportRound' | 'writeLandscapeReports'>>(
    LANDSCAPE_REPORT_BOOKKEEPING,
  );

/**
 * Under Worker Versioning the reports follow the current build (AUTO_UPGRADE), as the Stage lock
 * does: the workflow runs as long as its Landscape exists. Its input and state (the reports) stay
 * compatible across builds. Declared only on a versioned worker (an unversioned one must not send a behaviour).
 */
setWorkflowOptions(
  () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'AUTO_UPGRADE' } : {}),
  landscapeReport,
);
export async function landscapeReport(input: LandscapeReportInput): Promise<void> {
  const { landscape, intervalSeconds } = input;
  for (let round = 0; round < ROUNDS_PER_RUN; round++) {
    // Rounds start an interval apart: a type whose workers do not take the report (it waits up to
    // an interval) does not space out the others' reports. Date.now() is the workflow's clock, the
    // one the landscape's executions' completionTime is written on: `observedAt` is before any
    // worker reads, and comparable with them.
    const started = Date.now();
    const observedAt = kubeTime(new Date(started));
    try {
      const asked = await core.landscapeReportRound(landscape);
      if (!asked.exists) return;
      const answers = await Promise.all(asked.byType.map(({ type, targets }) => ask(input, type, targets)));
      const reports = nextReports(
        asked.reports,
        { observedAt, intervalSeconds, failedAt: kubeTime(new Date()) },
        answers,
      );
      if (!(await core.writeLandscapeReports(landscape, asked.uid, reports))) return;
      const failed = answers.filter((answer) => 'failed' in answer).map((answer) => answer.type);
      setCurrentDetails(
        `${answers.length - failed.length} of ${answers.length} executor types reported at ${observedAt}` +
          (failed.length > 0 ? `; no report from ${failed.join(', ')}` : ''),
      );
    } catch (err) {
      // The control plane's apiserver did not answer within the attempts: this round is skipped,
      // the last reports stand (and go stale, which the Stages say), the next round asks again.
      setCurrentDetails(`the round at ${observedAt} was skipped: ${messageOf(err)}`);
    }
    await sleep(Math.max(1, started + intervalSeconds * 1000 - Date.now()));
    if (workflowInfo().continueAsNewSuggested) break;
  }
  await continueAsNew<typeof landscapeReport>(input);
}

/** One executor type's report, or why none came. */
async function ask(input: LandscapeReportInput, type: string, targets: ReportTarget[]): Promise<ReportAnswer> {
  const queue = executorTaskQueue(type, input.landscape) + (input.queueSuffix ?? '');
  const { reportRoutes } = proxyActivities<LandscapeExecutorActivities>({
    taskQueue: queue,
    scheduleToStartTimeout: input.intervalSeconds * 1000,
    // Taken and done within two intervals: a healthy landscape's reports never go stale (3 intervals).
    startToCloseTimeout: input.intervalSeconds * 1000,
    retry: { maximumAttempts: 1 },
    summary: `report what the managed rules of Landscape ${input.landscape} hold`,
  });
  try {
    return { type, stages: (await reportRoutes(targets)).stages };
  } catch (err) {
    const cause = causeOf(err);
    if (cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START')
      return {
        type,
        failed: `no ${type} executor worker of Landscape ${input.landscape} took the report from task queue ${queue} within ${input.intervalSeconds}s`,
      };
    return { type, failed: messageOf(err) };
  }
}
