/** Activities that only the test workflows use. */
import type { Client } from '@temporalio/client';

export function createTestActivities(client: Client) {
  return {
    /** Ends a workflow the hard way: no cleanup, no release of anything it holds. */
    async terminateWorkflow(workflowId: string): Promise<void> {
      await client.workflow.getHandle(workflowId).terminate('terminated by the test');
    },
  };
}

export type TestActivities = ReturnType<typeof createTestActivities>;
