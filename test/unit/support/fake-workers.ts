/**
 * The workers of a workflow test file on the time-skipping test server: the core worker (the
 * project's workflows, the fake's core activities, the real lock activities behind the fake's
 * `before` hooks) and the fake executor
 * of type `fake`. Made once per file; their activities call the fake of the current test, which
 * `current()` returns, so each test starts from a clean fake.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createLockActivities, type LockActivities } from '../../../stage-lock/activities.js';
import { finishAndLetGoActivities } from '../../../activities/finish-and-let-go.js';
import type { ActivationActivities } from '../../../activities/core.js';
import type { TaskInput } from '../../../executors/types.js';
import { addSearchAttributes } from '../../../scripts/env/components.js';
import { executorTaskQueue } from '../../../shared/task-queues.js';
import { FakeCluster } from './fake-cluster.js';
import { testWorkflowBundle, timeSkippingEnv } from './temporal.js';

/**
 * Cancellation reaches an activity in the answer to a heartbeat, and the SDK sends heartbeats at
 * most every 80% of the heartbeat timeout (4 s for an executor, 8 s for the Lease renewal). The
 * test workers send them sooner, so that a cancelled activity stops within a fraction of a second.
 */
const HEARTBEAT_THROTTLE = '100 ms';

export interface FakeWorkers {
  env: TestWorkflowEnvironment;
  stop(): Promise<void>;
}

export async function startFakeWorkers(
  taskQueue: string,
  queueSuffix: string,
  current: () => FakeCluster,
  /** Landscapes with a fake worker of type `fake` polling their queue. */
  landscapes: readonly string[] = [],
): Promise<FakeWorkers> {
  const [env, workflowBundle] = await Promise.all([timeSkippingEnv(), testWorkflowBundle()]);
  // The workflow upserts the project's search attributes; the test server must know them, as a production namespace must.
  await addSearchAttributes(env.connection.operatorService, env.namespace ?? 'default');
  // Every activity the fake has (the names are the same for any fake: take them from a blank one).
  const coreNames = Object.keys(new FakeCluster().activities()) as (keyof ActivationActivities)[];
  const core = Object.fromEntries(
    coreNames.map((n) => [
      n,
      (...args: unknown[]) => (current().activities()[n] as (...a: unknown[]) => Promise<unknown>)(...args),
    ]),
  );
  const real = createLockActivities(env.client, taskQueue);
  const lock = Object.fromEntries(
    Object.entries(real).map(([n, activity]) => [
      n,
      async (...args: unknown[]) => {
        await current().before[n as keyof LockActivities]?.(...args);
        return (activity as (...a: unknown[]) => Promise<unknown>)(...args);
      },
    ]),
  ) as unknown as LockActivities;
  const workers = await Promise.all([
    Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle,
      maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
      activities: { ...core, ...lock, ...finishAndLetGoActivities({ ...(core as ActivationActivities), ...lock }) },
    }),
    Worker.create({
      connection: env.nativeConnection,
      taskQueue: executorTaskQueue('fake') + queueSuffix,
      maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
      activities: { executeTask: (input: TaskInput) => current().executorActivities().executeTask(input) },
    }),
    ...landscapes.map((landscape) =>
      Worker.create({
        connection: env.nativeConnection,
        taskQueue: executorTaskQueue('fake', landscape) + queueSuffix,
        maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
        activities: {
          observeTask: (input: TaskInput) => current().landscapeExecutorActivities(landscape).observeTask(input),
          executeTask: (input: TaskInput) => current().landscapeExecutorActivities(landscape).executeTask(input),
        },
      }),
    ),
  ]);
  const running = Promise.all(workers.map((w) => w.run()));
  return {
    env,
    async stop() {
      for (const w of workers) w.shutdown();
      await running;
      await env.teardown();
    },
  };
}
