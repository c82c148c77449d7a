/**
 * The integration tests' jest environment: node's, plus one cleanup after every test file. Each
 * file's namespaces (test/support/owned.ts records them as they are created or removed) may leave
 * Temporal workflows Running on the shared server: activations that failed and wait out their
 * 7-day retry window, idle Stage lock workflows. Once the file's own afterAll hooks have stopped
 * its workers, this terminates every Running `vectoractivation/<ns>/…` and `stage-lock/<ns>/…`
 * workflow of those namespaces. Here rather than in a hook, because jest runs afterAll hooks in
 * the order they are declared, and a support module's would run before the file's own stop():
 * a watcher still running would close out the terminated workflows with runs of its own.
 *
 * Plain JavaScript: jest loads the environment without transforming it.
 */
import { TestEnvironment } from 'jest-environment-node';

/** The global (in the test file's context) under which test/support/owned.ts lists namespaces. */
const OWNED = '__konfidenceTestNamespaces';

/** A few namespaces a query: the visibility query stays short. */
const PER_QUERY = 8;
/** Terminating can make new work appear (nothing should run by then): list again, at most this often. */
const PASSES = 3;

export default class IntegrationEnvironment extends TestEnvironment {
  async teardown() {
    const namespaces = [...new Set(this.global[OWNED] ?? [])];
    try {
      await terminateWorkflowsOf(namespaces);
    } catch (err) {
      console.error(
        `test cleanup: could not terminate the workflows of ${namespaces.join(', ')}: ${err?.stack ?? err}`,
      );
    }
    await super.teardown();
  }
}

/** The visibility query for the Running workflows of these namespaces (the id prefixes of shared/activation.ts activationWorkflowId and stage-lock/contract.ts stageLockWorkflowId). */
function runningIn(namespaces) {
  const ids = namespaces.flatMap((ns) => [
    `WorkflowId STARTS_WITH 'vectoractivation/${ns}/'`,
    `WorkflowId STARTS_WITH 'stage-lock/${ns}/'`,
  ]);
  return `ExecutionStatus = 'Running' AND (${ids.join(' OR ')})`;
}

async function terminateWorkflowsOf(namespaces) {
  const address = process.env.TEMPORAL_ADDRESS;
  if (namespaces.length === 0 || !address) return;
  const { Client, Connection, WorkflowNotFoundError } = await import('@temporalio/client');
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
    for (let i = 0; i < namespaces.length; i += PER_QUERY) {
      const query = runningIn(namespaces.slice(i, i + PER_QUERY));
      for (let pass = 0; pass < PASSES; pass++) {
        // Listed first, terminated after: terminating while paging would move the pages.
        const running = [];
        for await (const w of client.workflow.list({ query })) running.push(w);
        if (running.length === 0) break;
        await Promise.all(
          running.map((w) =>
            client.workflow
              .getHandle(w.workflowId, w.runId)
              .terminate('test cleanup: the test file that started it has finished')
              .catch((err) => {
                // Closed meanwhile (it finished, or a close-out ended it): nothing to do.
                if (!(err instanceof WorkflowNotFoundError)) throw err;
              }),
          ),
        );
      }
    }
  } finally {
    await connection.close();
  }
}
