/**
 * The core worker: runs the activation and lock workflows and the activities that talk to the
 * Kubernetes API, on the core task queue. Executor types get workers of their own.
 */
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivationActivities } from '../activities/core.js';
import { createControlPlaneActivities } from '../activities/control-plane.js';
import { createLockActivities } from '../activities/lock.js';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/group.js';
import type { k8s } from '../k8s/client.js';
import { CORE_TASK_QUEUE } from '../shared/task-queues.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface CoreWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  kubeConfig: k8s.KubeConfig;
  /** Client for the activities that signal-with-start the Stage lock and look at workflows. */
  client: Client;
  systemNamespace?: string;
  taskQueue?: string;
  /** A prebuilt bundle (tests build one and share it); default: bundle workflowsPath. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

export function createCoreWorker(options: CoreWorkerOptions): Promise<Worker> {
  const taskQueue = options.taskQueue ?? CORE_TASK_QUEUE;
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue,
    // On SIGTERM in-flight tasks get this long to finish before they are cancelled (a heartbeating
    // activity then fails its attempt and Temporal retries it on another replica); within a Pod's
    // default 30 s termination grace period.
    shutdownGraceTime: '25 seconds',
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
    activities: {
      ...createControlPlaneActivities(options.kubeConfig),
      ...createActivationActivities({ kubeConfig: options.kubeConfig, systemNamespace: options.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE }),
      ...createLockActivities(options.client, taskQueue),
    },
  });
}
