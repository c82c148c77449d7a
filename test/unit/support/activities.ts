/** Activities that only the test workflows use. */
import type { Client } from '@temporalio/client';
import { terminateAtRest } from './at-rest.js';

export function createTestActivities(client: Client) {
  return {
    /** Ends a workflow the hard way: no cleanup, no release of anything it holds. */
    async terminateWorkflow(workflowId: string): Promise<void> {
      await terminateAtRest(client.workflow.getHandle(workflowId), 'terminated by the test', 5_000);
    },
  };
}

export type TestActivities = ReturnType<typeof createTestActivities>;
