/** Task queue names: one for the core (workflows and Kubernetes bookkeeping), one per executor type. */
export const CORE_TASK_QUEUE = 'konfidence-core';

export function executorTaskQueue(type: string): string {
  return `konfidence-executor-${type}`;
}
