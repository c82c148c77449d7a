/**
 * The core worker: runs the project's workflows and the activities that talk to the Kubernetes API
 * on the core task queue. Executor types get workers of their own, on their own task queues.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createControlPlaneActivities } from '../activities/control-plane.js';
import type { k8s } from '../k8s/client.js';
import { CORE_TASK_QUEUE } from '../shared/task-queues.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface CoreWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  kubeConfig: k8s.KubeConfig;
  taskQueue?: string;
  /** A prebuilt bundle (tests build one and share it); default: bundle workflowsPath. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

export function createCoreWorker(options: CoreWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue ?? CORE_TASK_QUEUE,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
    activities: createControlPlaneActivities(options.kubeConfig),
  });
}
