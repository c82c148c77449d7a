/** Activities around the per-Stage lock workflow that a workflow cannot do itself. */
import type { Client } from '@temporalio/client';
import { requestLockSignal, stageLockWorkflowId, type LockRequest } from '../shared/activation.js';

export function createLockActivities(client: Client, taskQueue: string) {
  return {
    /** Queues the request at the Stage's lock, starting the lock workflow if none runs. */
    async requestStageLock(namespace: string, stage: string, request: LockRequest): Promise<void> {
      await client.workflow.signalWithStart('stageLock', {
        workflowId: stageLockWorkflowId(namespace, stage),
        taskQueue,
        args: [],
        signal: requestLockSignal,
        signalArgs: [request],
        staticSummary: `Serializes the activations of Stage ${namespace}/${stage}`,
      });
    },

    /**
     * Whether the workflow (its latest run) still runs: false when it closed or is unknown. Other
     * errors throw; the lock retries a few times and otherwise checks again at its next period.
     */
    async isWorkflowOpen(workflowId: string): Promise<boolean> {
      try {
        const description = await client.workflow.getHandle(workflowId).describe();
        return description.status.name === 'RUNNING';
      } catch (err) {
        if ((err as Error).name === 'WorkflowNotFoundError') return false;
        throw err;
      }
    },
  };
}

export type LockActivities = ReturnType<typeof createLockActivities>;
