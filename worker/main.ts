/**
 * Entry point of the processes that run in a cluster, one role each:
 *   tsx worker/main.ts core            workflows + Kubernetes activities (task queue konfidence-core)
 *   tsx worker/main.ts watcher         VectorActivation informer that starts workflows
 *   tsx worker/main.ts executor TYPE   one executor type (gateway-api, istio)
 *   tsx worker/main.ts stage-controller  Stages, StageVersions and usages (ADR-0013)
 *   tsx worker/main.ts all             everything in one process
 * Configuration: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_UI_URL, KUBECONFIG (or the
 * in-cluster service account), KONFIDENCE_SYSTEM_NAMESPACE, KONFIDENCE_WATCH_NAMESPACES (comma list),
 * KONFIDENCE_QUEUE_SUFFIX.
 */
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { executorFor } from '../executors/index.js';
import { loadKubeConfig } from '../k8s/client.js';
import { CORE_TASK_QUEUE, executorTaskQueue } from '../shared/task-queues.js';
import { loadConfig } from './config.js';
import { createCoreWorker } from './core-worker.js';
import { createExecutorWorker } from './executor-worker.js';
import { startSystem } from './system.js';
import { ActivationWatcher } from './watcher.js';
import { StageController } from '../controllers/stage-controller.js';

const [role = 'all', type] = process.argv.slice(2);
Runtime.install({ logger: new DefaultLogger('WARN') });
const config = loadConfig();
const kubeConfig = loadKubeConfig(config.KUBECONFIG);
const namespaces = config.KONFIDENCE_WATCH_NAMESPACES?.split(',').map((n) => n.trim()).filter(Boolean);
const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
const native = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
const common = { connection: native, namespace: config.TEMPORAL_NAMESPACE, kubeConfig };
const suffix = config.KONFIDENCE_QUEUE_SUFFIX;

let worker: Worker | undefined;
if (role === 'core') {
  worker = await createCoreWorker({ ...common, client, systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE, taskQueue: CORE_TASK_QUEUE + suffix });
} else if (role === 'executor') {
  const executor = type ? executorFor(type) : undefined;
  if (!executor) throw new Error(`usage: worker/main.ts executor TYPE; unknown type ${type ?? '(none)'}`);
  worker = await createExecutorWorker({ ...common, executor, taskQueue: executorTaskQueue(executor.type) + suffix });
} else if (role === 'watcher') {
  const watcher = new ActivationWatcher({
    kubeConfig,
    client,
    taskQueue: CORE_TASK_QUEUE + suffix,
    ...(suffix ? { queueSuffix: suffix } : {}),
    ...(namespaces ? { namespaces } : {}),
    ...(config.TEMPORAL_UI_URL ? { uiUrl: config.TEMPORAL_UI_URL } : {}),
  });
  await watcher.start();
  await new Promise<void>((resolve) => ['SIGINT', 'SIGTERM'].forEach((s) => process.once(s, () => resolve())));
  await watcher.stop();
} else if (role === 'stage-controller') {
  const controller = new StageController({ kubeConfig, ...(namespaces ? { namespaces } : {}) });
  await controller.start();
  await new Promise<void>((resolve) => ['SIGINT', 'SIGTERM'].forEach((s) => process.once(s, () => resolve())));
  await controller.stop();
} else if (role === 'all') {
  const system = await startSystem({
    temporalAddress: config.TEMPORAL_ADDRESS,
    temporalNamespace: config.TEMPORAL_NAMESPACE,
    kubeConfig,
    systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
    ...(suffix ? { queueSuffix: suffix } : {}),
    ...(namespaces ? { namespaces } : {}),
    ...(config.TEMPORAL_UI_URL ? { uiUrl: config.TEMPORAL_UI_URL } : {}),
  });
  await new Promise<void>((resolve) => ['SIGINT', 'SIGTERM'].forEach((s) => process.once(s, () => resolve())));
  await system.stop();
} else {
  throw new Error(`unknown role ${role}: core, watcher, executor TYPE, stage-controller or all`);
}
if (worker) {
  console.log(`${role}${type ? ` ${type}` : ''} worker polling ${config.TEMPORAL_ADDRESS} (${config.TEMPORAL_NAMESPACE})`);
  await worker.run(); // resolves after SIGINT/SIGTERM once in-flight tasks are done
}
await native.close();
await connection.close();
