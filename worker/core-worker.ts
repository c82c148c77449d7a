/**
 * The core worker: runs the activation and lock workflows and the activities that talk to the
 * Kubernetes API, on the core task queue. Executor types get workers of their own.
 */
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivationActivities } from '../activities/core.js';
import { createControlPlaneActivities } from '../activities/control-plane.js';
import { finishAndLetGoActivities } from '../activities/finish-and-let-go.js';
import { createLockActivities } from '../stage-lock/activities.js';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/group.js';
import type { k8s } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import type { SystemConfig } from '../k8s/system-config.js';
import { coreDeploymentName } from '../decisions/rollout.js';
import { CORE_TASK_QUEUE } from '../shared/task-queues.js';
import { sharedModules, workflowsPath } from './workflows-path.js';

export interface CoreWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  kubeConfig: k8s.KubeConfig;
  /** Client for the activities that signal-with-start the Stage lock and look at workflows. */
  client: Client;
  systemNamespace?: string;
  taskQueue?: string;
  /** A bundle made before (in memory, or a file: KONFIDENCE_WORKFLOW_BUNDLE); default: bundled from the sources at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * Set: this worker is build `buildId` of the Worker Deployment konfidence-core<suffix> (Worker
   * Versioning, docs/scale.md): activation workflows stay on the build that started them, the Stage
   * locks follow the current version. Unset: unversioned, every worker takes every task.
   */
  buildId?: string;
  /** Appended to the deployment name like to the task queues; default: what taskQueue adds to konfidence-core. */
  queueSuffix?: string;
  /** Where analyses that name no Prometheus address ask (KONFIDENCE_PROMETHEUS_URL). */
  prometheusUrl?: string;
  /** Workflows kept in memory between their tasks (KONFIDENCE_MAX_CACHED_WORKFLOWS). */
  maxCachedWorkflows?: number;
  /**
   * The system namespace's plans, registrations and CircuitBreakers as watched, which the
   * activities read instead of asking per activation; started here, stopped by the owner after the
   * worker. Unset: read per activation.
   */
  systemConfig?: SystemConfig;
}

/**
 * Workflows the core worker keeps in memory between their tasks, each about 1 MiB. The SDK's
 * default grows with the heap limit (thousands on a large machine): a thousand progressive
 * activations waiting at gates, each with its Stage's lock, would all stay in memory (804 MiB with
 * 500 of them). Past this many, the least recently used is evicted and replayed from its history
 * when its next task comes (a gate's end, an answer): an activation's history is a few dozen
 * events, so an approval of a gate that waited longest is answered in a few hundred milliseconds
 * (docs/performance.md). Within the 192 MiB heap of the core's Deployment.
 */
export const MAX_CACHED_WORKFLOWS = 100;

/**
 * Before the worker polls, the Kubernetes side of its first workflow task is made ready: a read
 * through the activities' client opens the keep-alive connection and its TLS session, and runs the
 * client's request and response code once. The first activation's task runs local activities that
 * would otherwise pay for that (on a busy start, a first task took over a second). Best effort:
 * a refused or failed read changes nothing, and at most WARM_UP_MS is waited.
 */
async function warmUp(
  kubeConfig: k8s.KubeConfig,
  systemNamespace: string,
  systemConfig: SystemConfig | undefined,
): Promise<void> {
  const objects = new CustomObjects(kubeConfig);
  const reads = Promise.allSettled([
    objects.list('ActivationTaskRegistration', systemNamespace),
    objects.get('Stage', systemNamespace, 'konfidence-warm-up'),
    // Its first lists: until they are in, activations read the configuration per activation.
    systemConfig?.start(),
  ]);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([reads, new Promise((resolve) => (timer = setTimeout(resolve, WARM_UP_MS)))]);
  clearTimeout(timer);
}
const WARM_UP_MS = 3_000;

export async function createCoreWorker(options: CoreWorkerOptions): Promise<Worker> {
  const taskQueue = options.taskQueue ?? CORE_TASK_QUEUE;
  const suffix =
    options.queueSuffix ?? (taskQueue.startsWith(CORE_TASK_QUEUE) ? taskQueue.slice(CORE_TASK_QUEUE.length) : '');
  const systemNamespace = options.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE;
  const [worker] = await Promise.all([
    createWorker(options, taskQueue, suffix),
    warmUp(options.kubeConfig, systemNamespace, options.systemConfig),
  ]);
  return worker;
}

function createWorker(options: CoreWorkerOptions, taskQueue: string, suffix: string): Promise<Worker> {
  const activation = createActivationActivities({
    kubeConfig: options.kubeConfig,
    systemNamespace: options.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE,
    ...(options.buildId ? { coreBuildId: options.buildId } : {}),
    ...(options.prometheusUrl ? { prometheusUrl: options.prometheusUrl } : {}),
    ...(options.systemConfig ? { systemConfig: options.systemConfig } : {}),
  });
  const lock = createLockActivities(options.client, taskQueue);
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue,
    // On SIGTERM in-flight tasks get this long to finish before they are cancelled (a heartbeating
    // activity then fails its attempt and Temporal retries it on another replica); within a Pod's
    // default 30 s termination grace period.
    shutdownGraceTime: '25 seconds',
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : { workflowsPath, bundlerOptions: { preloadModules: sharedModules } }),
    maxCachedWorkflows: options.maxCachedWorkflows ?? MAX_CACHED_WORKFLOWS,
    ...(options.buildId
      ? {
          workerDeploymentOptions: {
            version: { deploymentName: coreDeploymentName(suffix), buildId: options.buildId },
            useWorkerVersioning: true,
            // What a workflow without its own declaration gets: it finishes on the code that began it.
            defaultVersioningBehavior: 'PINNED',
          },
        }
      : {}),
    activities: {
      ...createControlPlaneActivities(options.kubeConfig),
      ...activation,
      ...lock,
      ...finishAndLetGoActivities({ ...activation, ...lock }),
    },
  });
}
