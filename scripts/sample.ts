/**
 * The sample `npm start` runs: the flow a user lives, one step at a time, each printed as it happens.
 *   1. the vector of Stage `shop` (namespace konfidence-sample) changes: 1.0.1 on the first run, the
 *      next patch version on every later run;
 *   2. the Stage controller creates a StageVersion for it;
 *   3. the sample plays the deployment: it fills in the StageVersion's backend and reports it Ready;
 *   4. the Stage controller creates the VectorActivation, and the workflow switches the HTTPRoute,
 *      then the VirtualService (the "default" plan: Gateway API step, then Istio step).
 * Everything it creates besides the vector change is create-if-absent: repeating a run is safe.
 */
import { API_VERSION } from '../api/group.js';
import { apiStatus, k8s } from '../k8s/client.js';
import { applyCrds, ensureNamespace } from '../k8s/crds.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import type { ActivationRef } from '../shared/activation.js';
import { kubeTime } from '../shared/format.js';
import { pollUntil } from './env/process.js';
import { routeCrds } from './route-crds.js';

export const SAMPLE_NAMESPACE = 'konfidence-sample';
const STAGE = 'shop';
const IMAGE = 'sample.konfidence.cloud/shop';
/** The backend the routes send traffic to before the first activation: the registrations adopt it. */
const LEGACY = 'shop-legacy';
const STEP_TIMEOUT_MS = 60_000;

export interface SampleRun {
  activation: ActivationRef;
  stage: string;
  from?: string;
  to: string;
  route: string;
}

/** Routes, registrations and the default plan: what a platform team sets up once. */
async function prepare(kc: k8s.KubeConfig, objects: CustomObjects, systemNamespace: string): Promise<void> {
  await applyCrds(kc, routeCrds());
  await ensureNamespace(kc, SAMPLE_NAMESPACE);
  const generic = k8s.KubernetesObjectApi.makeApiClient(kc);
  const routes = [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: STAGE, namespace: SAMPLE_NAMESPACE },
      spec: {
        parentRefs: [{ name: 'sample-gateway' }],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: LEGACY, port: 8080, weight: 100 }] }],
      },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: STAGE, namespace: SAMPLE_NAMESPACE },
      spec: { hosts: [STAGE], http: [{ name: 'primary', route: [{ destination: { host: STAGE, subset: 'legacy' }, weight: 100 }] }] },
    },
  ];
  for (const route of routes) {
    try {
      await generic.create(route);
    } catch (err) {
      if (apiStatus(err) !== 409) throw err; // routes of an earlier run: activations moved them on
    }
  }
  // Created, or brought up to date: a sample of an older checkout may have left other specs.
  const cr = async (kind: string, name: string, spec: unknown) => {
    const { created } = await objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace: systemNamespace }, spec });
    if (!created) await objects.mergeSpec(kind, systemNamespace, name, spec);
  };
  await cr('ActivationTaskRegistration', 'sample-gateway', {
    type: 'gateway-api',
    timeoutSeconds: 60,
    spec: { routes: [{ name: STAGE, namespace: SAMPLE_NAMESPACE }], adopt: [{ name: LEGACY }] },
  });
  await cr('ActivationTaskRegistration', 'sample-mesh', {
    type: 'istio',
    timeoutSeconds: 60,
    spec: { virtualServices: [{ name: STAGE, namespace: SAMPLE_NAMESPACE }], host: STAGE, adopt: [{ host: STAGE, subset: 'legacy' }] },
  });
  // "default": the plan of every VectorActivation that names none, as the Stage controller's do.
  await cr('ActivationExecutionPlan', 'default', {
    onFailure: 'Revert',
    steps: [
      { name: 'gateway', tasks: ['sample-gateway'] },
      { name: 'mesh', tasks: ['sample-mesh'] },
    ],
  });
}

/** The next vector: 1.0.1 for a new Stage, else the current one's patch version plus one. */
function nextVector(current: string | undefined): string {
  const patch = Number(current?.match(/:1\.0\.(\d+)$/)?.[1] ?? 0);
  return `${IMAGE}:1.0.${patch + 1}`;
}

export async function runSample(kc: k8s.KubeConfig, systemNamespace: string, say: (line: string) => void): Promise<SampleRun> {
  const objects = new CustomObjects(kc);
  await prepare(kc, objects, systemNamespace);
  const wait = <T>(what: string, probe: () => Promise<T | undefined>) => pollUntil(probe, STEP_TIMEOUT_MS, what, 200);

  // 1. The change a release pipeline makes.
  const stage = await objects.get('Stage', SAMPLE_NAMESPACE, STAGE);
  const from: string | undefined = stage?.status?.activeStageVersion;
  const vector = nextVector(stage?.spec.vector);
  if (stage) await objects.mergeSpec('Stage', SAMPLE_NAMESPACE, STAGE, { vector });
  else await objects.create({ apiVersion: API_VERSION, kind: 'Stage', metadata: { name: STAGE, namespace: SAMPLE_NAMESPACE }, spec: { vector } });
  say(`1. Stage ${STAGE}: spec.vector set to ${vector}${from ? ` (serving ${from})` : ' (new Stage)'}`);

  // 2. The Stage controller's answer: a StageVersion of that vector, the Stage's target.
  const sv = await wait(`the Stage controller to create a StageVersion of ${vector}`, async () => {
    const s = await objects.get('Stage', SAMPLE_NAMESPACE, STAGE);
    const target = s?.status?.targetStageVersion;
    const found = target ? await objects.get('StageVersion', SAMPLE_NAMESPACE, target) : undefined;
    return found?.spec.vector === vector ? found : undefined;
  });
  const to: string = sv.metadata.name;
  const revision: number = sv.spec.revision;
  say(`2. StageVersion ${to} (revision ${revision}) created by the Stage controller`);

  // 3. What the deployment does once the new version is rolled out.
  const backend = { service: `shop-v${revision}`, port: 8080, subset: `v${revision}` };
  await objects.mergeSpec('StageVersion', SAMPLE_NAMESPACE, to, { ...sv.spec, backend });
  await objects.patchStatus('StageVersion', SAMPLE_NAMESPACE, to, {
    phase: 'Ready',
    conditions: [{ type: 'Ready', status: 'True', reason: 'RolledOut', message: `Service ${backend.service} is available (the sample plays the deployment)`, lastTransitionTime: kubeTime() }],
  });
  say(`3. StageVersion ${to} marked Ready (the sample plays the deployment: Service ${backend.service})`);

  // 4. The Stage controller creates the VectorActivation; the watcher starts its workflow.
  const va = await wait(`the Stage controller to create the VectorActivation of ${to}`, async () =>
    (await objects.list('VectorActivation', SAMPLE_NAMESPACE)).find((o) => o.spec.stage === STAGE && o.spec.stageVersion === to),
  );
  say(`4. VectorActivation ${va.metadata.name} created by the Stage controller`);
  return {
    activation: { namespace: SAMPLE_NAMESPACE, name: va.metadata.name, uid: va.metadata.uid! },
    stage: STAGE,
    ...(from ? { from } : {}),
    to,
    route: STAGE,
  };
}
