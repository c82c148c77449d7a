/**
 * The sample `npm start` runs: the flow a user lives, one step at a time, each printed as it happens.
 *   0. on the first run only, Stage `shop` (namespace konfidence-sample) starts out serving 1.0.0,
 *      as if activated before: a canary needs a version to share the traffic with;
 *   1. the vector of Stage `shop` changes: 1.0.1 on the first run, the next patch version on every
 *      later run;
 *   2. the Stage controller creates a StageVersion for it;
 *   3. the sample plays the deployment: it fills in the StageVersion's backend and reports it Ready;
 *   4. the Stage controller creates the VectorActivation, and the workflow runs the "default"
 *      plan's canary: 10 % (the HTTPRoute, then the VirtualService), an analysis of the new
 *      version's success rate as the local gateway counts its requests, 50 %, then it waits for
 *      an approval before 100 %.
 * The HTTPRoute is attached to the local gateway under SAMPLE_HOST: `npm start` serves every version
 * as a real server (scripts/apps/local-apps.ts) and sends it a light steady load.
 * Everything it creates besides the vector change is create-if-absent: repeating a run is safe.
 */
import { API_VERSION, LABEL_STAGE_NAME, LABEL_USAGE } from '../api/group.js';
import { apiStatus, k8s } from '../k8s/client.js';
import { applyCrds, ensureNamespace } from '../k8s/crds.js';
import { CustomObjects, type CustomObject } from '../k8s/custom-objects.js';
import type { ActivationRef } from '../shared/activation.js';
import { kubeTime } from '../shared/format.js';
import { activeUsageName } from '../shared/names.js';
import { pollUntil } from './env/process.js';
import { GATEWAY_PARENT_REF } from './env/gateway.js';
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

/** The sample route's hostname at the local gateway (the Host header of its requests). */
export const SAMPLE_HOST = `${STAGE}.${'konfidence-sample'}.local`;

/** The default plan: both routes at every weight of the canary, 10 % → analysis → 50 % → approval → 100 %. */
export const SAMPLE_PLAN = {
  onFailure: 'Revert',
  steps: [
    { name: 'gateway', tasks: ['sample-gateway'] },
    { name: 'mesh', tasks: ['sample-mesh'] },
  ],
  progression: {
    steps: [
      { setWeight: 10, name: 'canary' },
      { analysis: { name: 'success-rate' } },
      { setWeight: 50, name: 'half' },
      { pause: { timeoutSeconds: 3600 }, name: 'approval' },
    ],
    abort: { weights: [10], intervalSeconds: 10 },
  },
  // Built in: the share of the new version's requests the gateway saw answered without a 5xx. A
  // measurement without requests yet is let be, but one at least must have some (else a person decides).
  analyses: [
    {
      name: 'success-rate',
      dataPlane: { metric: 'request-success-rate', windowSeconds: 10 },
      initialDelaySeconds: 8,
      intervalSeconds: 2,
      count: 3,
      inconclusiveLimit: 2,
      successCondition: 'result >= 0.95',
    },
  ],
};

/** Routes, registrations and the default plan: what a platform team sets up once. */
async function prepare(
  kc: k8s.KubeConfig,
  objects: CustomObjects,
  systemNamespace: string,
  say: (line: string) => void,
): Promise<void> {
  await applyCrds(kc, routeCrds());
  await untilNotTerminating(kc, say);
  await ensureNamespace(kc, SAMPLE_NAMESPACE);
  const generic = k8s.KubernetesObjectApi.makeApiClient(kc);
  const routes = [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: STAGE, namespace: SAMPLE_NAMESPACE },
      spec: {
        parentRefs: [GATEWAY_PARENT_REF],
        hostnames: [SAMPLE_HOST],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/' } }],
            backendRefs: [{ name: 'shop-v1', port: 8080, weight: 100 }],
          },
        ],
      },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: STAGE, namespace: SAMPLE_NAMESPACE },
      spec: {
        hosts: [STAGE],
        http: [{ name: 'primary', route: [{ destination: { host: STAGE, subset: 'v1' }, weight: 100 }] }],
      },
    },
  ];
  for (const route of routes) {
    try {
      await generic.create(route);
    } catch (err) {
      if (apiStatus(err) !== 409) throw err;
      // A route of an earlier run: activations moved its rules on; where it attaches is the sample's.
      if (route.kind === 'HTTPRoute')
        await generic.patch(
          { ...route, spec: { parentRefs: route.spec.parentRefs, hostnames: route.spec.hostnames } },
          undefined,
          undefined,
          undefined,
          undefined,
          k8s.PatchStrategy.MergePatch,
        );
    }
  }
  // Created, or brought up to date: a sample of an older checkout may have left other specs.
  const cr = async (kind: string, name: string, spec: unknown) => {
    const { created } = await objects.create({
      apiVersion: API_VERSION,
      kind,
      metadata: { name, namespace: systemNamespace },
      spec,
    });
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
    spec: {
      virtualServices: [{ name: STAGE, namespace: SAMPLE_NAMESPACE }],
      host: STAGE,
      adopt: [{ host: STAGE, subset: 'legacy' }],
    },
  });
  // "default": the plan of every VectorActivation that names none, as the Stage controller's do.
  await cr('ActivationExecutionPlan', 'default', SAMPLE_PLAN);
}

/** Longest wait for a sample namespace that is being deleted to go, before this run makes it again. */
const NAMESPACE_GONE_MS = 300_000;

/**
 * A run right after `kubectl delete namespace konfidence-sample` finds it terminating, and the
 * apiserver refuses anything new in it: wait until it is gone, saying so.
 */
async function untilNotTerminating(kc: k8s.KubeConfig, say: (line: string) => void): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const terminating = async () => {
    try {
      return Boolean((await core.readNamespace({ name: SAMPLE_NAMESPACE })).metadata?.deletionTimestamp);
    } catch (err) {
      if (apiStatus(err) === 404) return false;
      throw err;
    }
  };
  if (!(await terminating())) return;
  say(
    `namespace ${SAMPLE_NAMESPACE} is being deleted: waiting for it to go (at most ${NAMESPACE_GONE_MS / 60_000} minutes)`,
  );
  await pollUntil(
    async () => !(await terminating()),
    NAMESPACE_GONE_MS,
    `namespace ${SAMPLE_NAMESPACE} to finish terminating`,
    500,
  );
}

/** The backend of revision `r`: what the deployment of it provides. */
const backendOf = (revision: number) => ({ service: `shop-v${revision}`, port: 8080, subset: `v${revision}` });

/** Resolves once the version's server answers (npm start runs them): a Ready version is one that serves. */
export type Deployed = (stageVersion: string) => Promise<void>;

async function markReady(
  objects: CustomObjects,
  sv: CustomObject,
  revision: number,
  deployed: Deployed,
): Promise<void> {
  const backend = backendOf(revision);
  await objects.mergeSpec('StageVersion', SAMPLE_NAMESPACE, sv.metadata.name, { ...sv.spec, backend });
  await deployed(sv.metadata.name);
  await objects.patchStatus('StageVersion', SAMPLE_NAMESPACE, sv.metadata.name, {
    phase: 'Ready',
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'RolledOut',
        message: `Service ${backend.service} is available (the sample plays the deployment)`,
        lastTransitionTime: kubeTime(),
      },
    ],
  });
}

/**
 * A new Stage starts out serving 1.0.0, as if activated before: its StageVersion shop-1 is held by
 * the Stage's "active" usage before it is Ready, so no activation is made for it.
 */
async function bootstrap(
  objects: CustomObjects,
  wait: <T>(what: string, probe: () => Promise<T | undefined>) => Promise<T>,
  say: (line: string) => void,
  deployed: Deployed,
): Promise<void> {
  const vector = `${IMAGE}:1.0.0`;
  const { object: stage } = await objects.create({
    apiVersion: API_VERSION,
    kind: 'Stage',
    metadata: { name: STAGE, namespace: SAMPLE_NAMESPACE },
    spec: { vector },
  });
  const sv = await wait('the Stage controller to create the first StageVersion', async () =>
    (await objects.list('StageVersion', SAMPLE_NAMESPACE)).find(
      (x) => x.spec.stage === STAGE && x.spec.vector === vector,
    ),
  );
  await objects.create({
    apiVersion: API_VERSION,
    kind: 'StageVersionUsage',
    metadata: {
      name: activeUsageName(STAGE),
      namespace: SAMPLE_NAMESPACE,
      labels: { [LABEL_USAGE]: 'active', [LABEL_STAGE_NAME]: STAGE },
      ownerReferences: [
        { apiVersion: API_VERSION, kind: 'Stage', name: STAGE, uid: stage.metadata.uid!, blockOwnerDeletion: true },
      ],
    },
    spec: { reason: `serves the traffic of Stage ${STAGE}`, stageVersionRef: { name: sv.metadata.name } },
  });
  await markReady(objects, sv, sv.spec.revision, deployed);
  await wait(`Stage ${STAGE} to be Ready on ${sv.metadata.name}`, async () =>
    (await objects.get('Stage', SAMPLE_NAMESPACE, STAGE))?.status?.phase === 'Ready' ? true : undefined,
  );
  say(
    `0. Stage ${STAGE} serves ${sv.metadata.name} (${vector}), as if activated before: the canary shares its traffic with it`,
  );
}

/** The next vector: 1.0.1 for a new Stage, else the current one's patch version plus one. */
function nextVector(current: string | undefined): string {
  const patch = Number(current?.match(/:1\.0\.(\d+)$/)?.[1] ?? 0);
  return `${IMAGE}:1.0.${patch + 1}`;
}

export async function runSample(
  kc: k8s.KubeConfig,
  systemNamespace: string,
  say: (line: string) => void,
  deployed: Deployed = async () => undefined,
): Promise<SampleRun> {
  const objects = new CustomObjects(kc);
  await prepare(kc, objects, systemNamespace, say);
  const wait = <T>(what: string, probe: () => Promise<T | undefined>) => pollUntil(probe, STEP_TIMEOUT_MS, what, 200);

  if (!(await objects.get('Stage', SAMPLE_NAMESPACE, STAGE))) await bootstrap(objects, wait, say, deployed);

  // 1. The change a release pipeline makes.
  const stage = await objects.get('Stage', SAMPLE_NAMESPACE, STAGE);
  const from: string | undefined = stage?.status?.activeStageVersion;
  const vector = nextVector(stage?.spec.vector);
  if (stage) await objects.mergeSpec('Stage', SAMPLE_NAMESPACE, STAGE, { vector });
  else
    await objects.create({
      apiVersion: API_VERSION,
      kind: 'Stage',
      metadata: { name: STAGE, namespace: SAMPLE_NAMESPACE },
      spec: { vector },
    });
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
  await markReady(objects, sv, revision, deployed);
  say(`3. StageVersion ${to} marked Ready (the sample plays the deployment: Service ${backendOf(revision).service})`);

  // 4. The Stage controller creates the VectorActivation; the watcher starts its workflow.
  const va = await wait(`the Stage controller to create the VectorActivation of ${to}`, async () =>
    (await objects.list('VectorActivation', SAMPLE_NAMESPACE)).find(
      (o) => o.spec.stage === STAGE && o.spec.stageVersion === to,
    ),
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
