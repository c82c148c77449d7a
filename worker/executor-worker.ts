/** A worker for one executor type, on its own task queue: it only runs that type's tasks. */
import { NativeConnection, Worker } from '@temporalio/worker';
import { createExecutorActivities } from '../activities/execute-task.js';
import type { Executor } from '../executors/types.js';
import type { k8s } from '../k8s/client.js';
import { executorTaskQueue } from '../shared/task-queues.js';

export interface ExecutorWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  kubeConfig: k8s.KubeConfig;
  executor: Executor<any>;
  /** A Landscape's worker: kubeConfig reaches that cluster only, and the core keeps the records. */
  landscape?: string;
  /** Tests give each run its own queue; default konfidence-executor-<type>[@<landscape>]. */
  taskQueue?: string;
}

export function createExecutorWorker(o: ExecutorWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: o.connection,
    namespace: o.namespace,
    taskQueue: o.taskQueue ?? executorTaskQueue(o.executor.type, o.landscape),
    // On SIGTERM in-flight tasks get this long to finish before they are cancelled (a heartbeating
    // activity then fails its attempt and Temporal retries it on another replica).
    shutdownGraceTime: '25 seconds',
    activities: createExecutorActivities(o.executor, o.kubeConfig, o.landscape),
  });
}
