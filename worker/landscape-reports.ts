/**
 * Keeps one report workflow running per Landscape (workflows/landscape-report.ts): the core starts
 * it for every Landscape it watches, at start, when a Landscape is added and every five minutes
 * after, and the start finds the one that runs. A workflow ends by itself when its Landscape is gone.
 */
import type { Client } from '@temporalio/client';
import type { SystemConfig } from '../k8s/system-config.js';
import { apiMessage } from '../k8s/client.js';
import type { LogFn } from '../telemetry/log.js';
import type { landscapeReport } from '../workflows/landscape-report.js';
import { landscapeReportWorkflowId } from '../shared/task-queues.js';

/** How often a landscape's workers are asked what its routes hold (KONFIDENCE_LANDSCAPE_REPORT_SECONDS). */
export const LANDSCAPE_REPORT_SECONDS = 30;

/** How often every Landscape's report workflow is started again, in case one was terminated. */
const ENSURE_EVERY_MS = 5 * 60_000;

export function keepLandscapeReports(o: {
  client: Client;
  systemConfig: SystemConfig;
  /** The core's task queue (the workflow's). */
  taskQueue: string;
  queueSuffix?: string;
  intervalSeconds?: number;
  log: LogFn;
}): () => void {
  const intervalSeconds = o.intervalSeconds ?? LANDSCAPE_REPORT_SECONDS;
  let stopped = false;
  const ensure = async () => {
    for (const landscape of o.systemConfig.list('Landscape') ?? []) {
      if (stopped || landscape.metadata.deletionTimestamp) continue;
      const name = landscape.metadata.name;
      try {
        await o.client.workflow.start<typeof landscapeReport>('landscapeReport', {
          workflowId: landscapeReportWorkflowId(name, o.queueSuffix),
          taskQueue: o.taskQueue,
          args: [{ landscape: name, intervalSeconds, ...(o.queueSuffix ? { queueSuffix: o.queueSuffix } : {}) }],
          // Every start finds the workflow that runs; one that ended (its Landscape was gone) is started anew.
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          staticSummary: `Report what the routes of Landscape ${name} hold`,
        });
      } catch (err) {
        o.log(`the report workflow of Landscape ${name} could not be started: ${apiMessage(err)}`, { level: 'warn' });
      }
    }
  };
  void ensure();
  // A new Landscape gets its reports at once, not at the next interval (a report's status write
  // changes a Landscape too: that needs no start).
  const unsubscribe = o.systemConfig.onChange('Landscape', (type) => type === 'ADDED' && void ensure());
  // A workflow terminated from outside is started again, within ENSURE_EVERY_MS (a start of one
  // that runs is a request for nothing, so not every interval); the shutdown does not wait for it.
  const timer = setInterval(() => void ensure(), ENSURE_EVERY_MS).unref();
  return () => {
    stopped = true;
    unsubscribe();
    clearInterval(timer);
  };
}
