/**
 * Task queue names: one for the core (workflows and Kubernetes bookkeeping), one per executor type
 * for the control plane's own cluster, and one per executor type and Landscape, polled by that
 * landscape's own workers (docs/landscapes.md).
 */
export const CORE_TASK_QUEUE = 'konfidence-core';

export function executorTaskQueue(type: string, landscape?: string): string {
  return landscape === undefined ? `konfidence-executor-${type}` : `konfidence-executor-${type}@${landscape}`;
}

/** One report workflow per Landscape (and per queue suffix): starting it again finds the one that runs. */
export const landscapeReportWorkflowId = (landscape: string, queueSuffix = '') =>
  `konfidence-landscape-report-${landscape}${queueSuffix}`;
