/**
 * A landscape's executor worker as a process of its own, for a test to SIGKILL: the `sleepy` test
 * executor (test/support/executors.ts) with KONFIDENCE_LANDSCAPE, KUBECONFIG (the landscape's),
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and KONFIDENCE_QUEUE_SUFFIX from the environment, as
 * worker/main.ts runs a built-in type. Prints "polling" once it polls, and "started <execution>"
 * when a task begins its change.
 */
import { NativeConnection } from '@temporalio/worker';
import { loadKubeConfig } from '../../k8s/client.js';
import { executorTaskQueue } from '../../shared/task-queues.js';
import { createExecutorWorker } from '../../worker/executor-worker.js';
import type { Executor } from '../../executors/types.js';
import { sleepyExecutor } from './executors.js';

const landscape = process.env.KONFIDENCE_LANDSCAPE!;
const telling: Executor<{ seconds: number; records?: boolean }> = {
  ...sleepyExecutor,
  async route(input, assignment, config, ctx) {
    console.log(`started ${input.execution.name}`);
    return sleepyExecutor.route(input, assignment, config, ctx);
  },
};
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const worker = await createExecutorWorker({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  kubeConfig: loadKubeConfig(process.env.KUBECONFIG),
  executor: telling,
  landscape,
  taskQueue: executorTaskQueue(telling.type, landscape) + (process.env.KONFIDENCE_QUEUE_SUFFIX ?? ''),
});
console.log('polling');
await worker.run();
