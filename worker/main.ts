/**
 * Entry point of the core worker process: `tsx worker/main.ts` (or node on the built output), with
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and KUBECONFIG (or the in-cluster service account).
 */
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadKubeConfig } from '../k8s/client.js';
import { loadConfig } from './config.js';
import { createCoreWorker } from './core-worker.js';

Runtime.install({ logger: new DefaultLogger('WARN') });
const config = loadConfig();
const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
const worker = await createCoreWorker({
  connection,
  namespace: config.TEMPORAL_NAMESPACE,
  kubeConfig: loadKubeConfig(config.KUBECONFIG),
});
console.log(`core worker polling ${config.TEMPORAL_ADDRESS} namespace ${config.TEMPORAL_NAMESPACE}`);
// Worker.run resolves after SIGINT/SIGTERM, once in-flight tasks are done.
await worker.run();
await connection.close();
