/**
 * npm start — the whole system on this machine: the local control plane (etcd, kube-apiserver, the
 * Temporal dev server with its UI), the core worker, the gateway-api and istio executor workers and
 * the watcher and the Stage controller, plus a sample (scripts/sample.ts) that walks a new version of a
 * Stage from its vector change to live traffic, whose activation a newcomer can follow in the Temporal UI:
 * a canary that waits for the newcomer's approval before it sends the new version all the traffic.
 * Every version of the sample is a real server behind the local gateway (scripts/apps/local-apps.ts),
 * and a light steady load goes through the gateway, so `konfidence status` shows the traffic move.
 * Ctrl-C stops the workers; the control plane keeps running until `npm run env:down`.
 * --once: approve the canary itself, as `konfidence approve` does, and exit once the sample
 * activation has finished (used by the quick-start test).
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { whoAmI } from '../cli/commands/request.js';
import { isFinal } from '../decisions/activation.js';
import { loadKubeConfig } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { activationWorkflowId, ANNOTATION_APPROVE } from '../shared/activation.js';
import { loadConfig, workflowUrl } from '../worker/config.js';
import { startSystem } from '../worker/system.js';
import { up } from './env/control-plane.js';
import { pollUntil } from './env/process.js';
import { LocalApps } from './apps/local-apps.js';
import { startLoad, type Load } from './apps/load.js';
import { runSample, SAMPLE_HOST, SAMPLE_NAMESPACE } from './sample.js';

/** The sample's light load through the gateway: requests a second, and how many are kept (counts only). */
const SAMPLE_LOAD_RATE = 20;
const SAMPLE_LOAD_KEPT = 2_000;
/** How long the requests at the canary's weight are counted before the approval is asked for. */
const MEASURE_MS = 5_000;

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
// Ctrl-C is ours to handle (below): the Runtime's own handler would stop the workers and leave
// this script waiting for an activation nobody runs any more.
Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
const system = await startSystem({
  temporalAddress: config.TEMPORAL_ADDRESS,
  temporalNamespace: config.TEMPORAL_NAMESPACE,
  kubeConfig,
  uiUrl: config.TEMPORAL_UI_URL!,
  systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
  prometheusUrl: cp.prometheusUrl,
  ...(namespaces ? { namespaces } : {}),
});
// The sample's versions as real servers behind the gateway, as a deployment would run them.
const apps = new LocalApps({
  kubeConfig,
  namespaces: [SAMPLE_NAMESPACE],
  log: (line) => console.log(`  apps: ${line}`),
});
let load: Load | undefined;
/** Ctrl-C at any point, a gate's wait included: the load, the sample's servers and the workers stop. */
let stopping: Promise<void> | undefined;
const stop = () =>
  (stopping ??= (async () => {
    await load?.stop();
    await apps.stop();
    await system.stop();
  })());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.log('Stopping: the workers finish what they hold; npm run env:down stops the control plane.');
    void stop().then(() => process.exit(0));
  });
}
await apps.start();

console.log(`
konfidence-activation is running: watcher, Stage controller, core worker, gateway-api and istio executors.

  Temporal UI         ${config.TEMPORAL_UI_URL}
  kubeconfig          ${config.KUBECONFIG}
  Temporal address    ${config.TEMPORAL_ADDRESS} (namespace ${config.TEMPORAL_NAMESPACE})
  Prometheus          ${cp.prometheusUrl}
  gateway             ${cp.gatewayUrl} (Traefik; the sample's route answers to Host ${SAMPLE_HOST})

The sample: a new version of Stage ${SAMPLE_NAMESPACE}/shop, from the vector change to live traffic.
`);
// Live traffic from the start: what reaches each version is measured at the gateway (konfidence
// status shows it), and the canary's analysis has requests to measure (those before the route
// exists are not counted anywhere).
load = startLoad({ gatewayUrl: cp.gatewayUrl, host: SAMPLE_HOST, rate: SAMPLE_LOAD_RATE, keepLast: SAMPLE_LOAD_KEPT });
// A version is marked Ready once its server answers, as a deployment's readiness would say.
const deployed = (stageVersion: string) =>
  pollUntil(
    () => apps.deployed(SAMPLE_NAMESPACE, stageVersion) || undefined,
    60_000,
    `the server of ${stageVersion}`,
    100,
  )
    .then(() => apps.address(SAMPLE_NAMESPACE, stageVersion))
    .then(() => undefined);
const sample = await runSample(
  kubeConfig,
  config.KONFIDENCE_SYSTEM_NAMESPACE,
  (line) => console.log(`  ${line}`),
  deployed,
);
const workflowId = activationWorkflowId(sample.activation);
const link = workflowUrl(config, workflowId);

const name = sample.activation.name;
console.log(`
  sample activation   ${link}
                      VectorActivation ${SAMPLE_NAMESPACE}/${name} switches Stage ${sample.stage}
                      ${sample.from ? `from ${sample.from} ` : ''}to ${sample.to} as a canary: 10 %, an analysis of its success rate
                      at the gateway, 50 %, then it waits for your approval before 100 %
                      (each weight: step gateway, the HTTPRoute, then step mesh, the VirtualService)
  live traffic        ${SAMPLE_LOAD_RATE} requests/s through the gateway to Host ${SAMPLE_HOST}

In another shell:
  source ${cp.envFile}
  npx konfidence status shop -n ${SAMPLE_NAMESPACE}      (the weights recorded, and what the gateway measured)
  curl -H 'Host: ${SAMPLE_HOST}' ${cp.gatewayUrl}/
  kubectl get konfidence -n ${SAMPLE_NAMESPACE}
  kubectl describe va ${name} -n ${SAMPLE_NAMESPACE}
  kubectl get httproute ${sample.route} -n ${SAMPLE_NAMESPACE} -o yaml
  temporal workflow list --query 'Stage="${sample.stage}"'
`);

const objects = new CustomObjects(kubeConfig);
const final = (o: { status?: { phase?: string } } | undefined) => isFinal(o?.status?.phase);
const gated = await pollUntil(
  async () => {
    const o = await objects.get('VectorActivation', SAMPLE_NAMESPACE, name);
    return final(o) || o?.status?.progression?.gate?.type === 'Approval' ? o : undefined;
  },
  180_000,
  'the sample canary to reach its approval',
  250,
);
if (!final(gated)) {
  // What the requests say of the new weight: those answered after it was set, a few seconds' worth.
  const since = performance.now();
  await pollUntil(
    async () => performance.now() - since >= MEASURE_MS || undefined,
    MEASURE_MS + 5_000,
    'the requests at the new weight',
    100,
  );
  const answered = load.sent.filter((x) => x.at >= since && x.version);
  const shares = [...new Set(answered.map((x) => x.version!))]
    .sort()
    .map((v) => `${v} ${Math.round((answered.filter((x) => x.version === v).length / answered.length) * 100)} %`);
  console.log(`  the gateway sent the last ${answered.length} requests to: ${shares.join(', ')}`);
  console.log(`The canary sends ${gated!.status.progression.weight} % to ${sample.to}, its analysis passed, and it waits for your approval:
  npx konfidence approve ${name} -n ${SAMPLE_NAMESPACE}        (or promote, abort)
  kubectl annotate va ${name} -n ${SAMPLE_NAMESPACE} --overwrite ${ANNOTATION_APPROVE}="$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}') ok"
`);
  if (once) {
    // As `konfidence approve` does: the annotation, signed with the caller's user name.
    await objects.mergeMetadata('VectorActivation', SAMPLE_NAMESPACE, name, {
      annotations: { [ANNOTATION_APPROVE]: `${await whoAmI(kubeConfig)} npm-start-once-${Date.now()}` },
    });
    console.log('Approved (--once).');
  }
}
const va = await pollUntil(
  async () => {
    const o = await objects.get('VectorActivation', SAMPLE_NAMESPACE, name);
    return final(o) ? o : undefined;
  },
  once ? 120_000 : 24 * 3_600_000,
  'the sample activation',
  500,
);
console.log(`sample activation ${va!.status.phase}: ${va!.status.message}`);
// The workflow still releases the Stage after the status says Succeeded: let it finish first.
await system.client.workflow.getHandle(workflowId).result();
console.log(once ? 'Stopping (--once).' : 'Ctrl-C stops the workers; npm run env:down stops the control plane.');

if (!once) await new Promise<void>(() => undefined); // until Ctrl-C
await stop();
