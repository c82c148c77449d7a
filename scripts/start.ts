/**
 * npm start — the whole system on this machine: the local control plane (etcd, kube-apiserver, the
 * Temporal dev server with its UI) and the core worker, with a first workflow to look at in the UI.
 * Ctrl-C stops the worker; the control plane keeps running until `npm run env:down`.
 * --once: exit after the first workflow (used by the quick-start test).
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadKubeConfig } from '../k8s/client.js';
import { loadConfig, workflowUrl } from '../worker/config.js';
import { createCoreWorker } from '../worker/core-worker.js';
import { CORE_TASK_QUEUE } from '../shared/task-queues.js';
import { controlPlaneCheck } from '../workflows/index.js';
import { up } from './env/control-plane.js';

const once = process.argv.includes('--once');
const cp = await up();
const config = loadConfig({
  TEMPORAL_ADDRESS: cp.temporalAddress,
  TEMPORAL_NAMESPACE: cp.temporalNamespace,
  TEMPORAL_UI_URL: cp.temporalUiUrl,
  KUBECONFIG: cp.kubeconfig,
});

Runtime.install({ logger: new DefaultLogger('WARN') });
const workerConnection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
const worker = await createCoreWorker({
  connection: workerConnection,
  namespace: config.TEMPORAL_NAMESPACE,
  kubeConfig: loadKubeConfig(config.KUBECONFIG),
});
const running = worker.run();

const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
const workflowId = `control-plane-check-${randomUUID().slice(0, 8)}`;
const report = await client.workflow.execute(controlPlaneCheck, {
  taskQueue: CORE_TASK_QUEUE,
  workflowId,
  staticSummary: 'Checks that Temporal, the core worker and the Kubernetes API work together',
});
await connection.close();

console.log(`
konfidence-activation is running.

  Temporal UI        ${config.TEMPORAL_UI_URL}
  first workflow     ${workflowUrl(config, workflowId)}
                     Kubernetes ${report.kubernetesVersion}, ${report.servedKinds.length} konfidence kinds served
  kubeconfig         ${config.KUBECONFIG}
  Temporal address   ${config.TEMPORAL_ADDRESS} (namespace ${config.TEMPORAL_NAMESPACE})

In another shell:
  source ${cp.envFile}
  kubectl get crds
  kubectl get konfidence -A
  temporal workflow list

${once ? 'Stopping (--once).' : 'Ctrl-C stops the worker; npm run env:down stops the control plane.'}`);

if (once) worker.shutdown();
await running;
await workerConnection.close();
