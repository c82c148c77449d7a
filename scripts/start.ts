/**
 * npm start — the whole system on this machine: the local control plane (etcd, kube-apiserver, the
 * Temporal dev server with its UI), the core worker, the gateway-api and istio executor workers and
 * the watcher and the Stage controller, plus a sample (scripts/sample.ts) that walks a new version of a
 * Stage from its vector change to live traffic, whose activation a newcomer can follow in the Temporal UI.
 * Ctrl-C stops the workers; the control plane keeps running until `npm run env:down`.
 * --once: exit once the sample activation has finished (used by the quick-start test).
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadKubeConfig } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { activationWorkflowId } from '../shared/activation.js';
import { loadConfig, workflowUrl } from '../worker/config.js';
import { startSystem } from '../worker/system.js';
import { up } from './env/control-plane.js';
import { pollUntil } from './env/process.js';
import { runSample, SAMPLE_NAMESPACE } from './sample.js';

const once = process.argv.includes('--once');
const cp = await up();
const config = loadConfig({
  ...process.env,
  TEMPORAL_ADDRESS: cp.temporalAddress,
  TEMPORAL_NAMESPACE: cp.temporalNamespace,
  TEMPORAL_UI_URL: cp.temporalUiUrl,
  KUBECONFIG: cp.kubeconfig,
});
// All namespaces unless KONFIDENCE_WATCH_NAMESPACES says otherwise (the quick-start test limits it,
// so that its system does not take activations of the tests running beside it).
const namespaces = config.KONFIDENCE_WATCH_NAMESPACES?.split(',').filter(Boolean);
const kubeConfig = loadKubeConfig(config.KUBECONFIG);

// ERROR: an activation's failures are reported on its VectorActivation, not as worker log noise.
Runtime.install({ logger: new DefaultLogger('ERROR') });
const system = await startSystem({
  temporalAddress: config.TEMPORAL_ADDRESS,
  temporalNamespace: config.TEMPORAL_NAMESPACE,
  kubeConfig,
  uiUrl: config.TEMPORAL_UI_URL!,
  systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
  ...(namespaces ? { namespaces } : {}),
});

console.log(`
konfidence-activation is running: watcher, Stage controller, core worker, gateway-api and istio executors.

  Temporal UI         ${config.TEMPORAL_UI_URL}
  kubeconfig          ${config.KUBECONFIG}
  Temporal address    ${config.TEMPORAL_ADDRESS} (namespace ${config.TEMPORAL_NAMESPACE})

The sample: a new version of Stage ${SAMPLE_NAMESPACE}/shop, from the vector change to live traffic.
`);
const sample = await runSample(kubeConfig, config.KONFIDENCE_SYSTEM_NAMESPACE, (line) => console.log(`  ${line}`));
const workflowId = activationWorkflowId(sample.activation);
const link = workflowUrl(config, workflowId);

console.log(`
  sample activation   ${link}
                      VectorActivation ${SAMPLE_NAMESPACE}/${sample.activation.name} switches Stage ${sample.stage}
                      ${sample.from ? `from ${sample.from} ` : ''}to ${sample.to} (step gateway: HTTPRoute, then step mesh: VirtualService)

In another shell:
  source ${cp.envFile}
  kubectl get konfidence -n ${SAMPLE_NAMESPACE}
  kubectl describe va ${sample.activation.name} -n ${SAMPLE_NAMESPACE}
  kubectl get httproute ${sample.route} -n ${SAMPLE_NAMESPACE} -o yaml
  temporal workflow list --query 'Stage="${sample.stage}"'
`);

const objects = new CustomObjects(kubeConfig);
const va = await pollUntil(
  async () => {
    const o = await objects.get('VectorActivation', SAMPLE_NAMESPACE, sample.activation.name);
    return ['Succeeded', 'Failed', 'Skipped', 'Cancelled'].includes(o?.status?.phase) ? o : undefined;
  },
  120_000,
  'the sample activation',
  250,
);
console.log(`sample activation ${va!.status.phase}: ${va!.status.message}`);
// The workflow still releases the Stage after the status says Succeeded: let it finish first.
await system.client.workflow.getHandle(workflowId).result();
console.log(once ? 'Stopping (--once).' : 'Ctrl-C stops the workers; npm run env:down stops the control plane.');

if (!once) await new Promise<void>((resolve) => ['SIGINT', 'SIGTERM'].forEach((s) => process.once(s, () => resolve())));
await system.stop();
