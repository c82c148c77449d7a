/**
 * The sample `npm start` creates: Stage `shop` in namespace konfidence-sample with an HTTPRoute and a
 * VirtualService, a two-step plan (Gateway API, then Istio) and, on every run, a new StageVersion
 * and a VectorActivation that switches the Stage to it. Repeating a run is safe.
 */
import { API_VERSION } from '../api/group.js';
import { vectorLabelValue } from '../api/labels.js';
import { apiStatus, k8s } from '../k8s/client.js';
import { applyCrds, ensureNamespace } from '../k8s/crds.js';
import { routeCrds } from './route-crds.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import type { ActivationRef } from '../shared/activation.js';

export const SAMPLE_NAMESPACE = 'konfidence-sample';
const STAGE = 'shop';

const backend = (r: number) => ({ service: `shop-v${r}`, port: 8080, subset: `v${r}` });

export async function createSample(kc: k8s.KubeConfig, systemNamespace: string) {
  // The sample routes with the upstream Gateway API and Istio CRDs the tests use.
  await applyCrds(kc, routeCrds());
  await ensureNamespace(kc, SAMPLE_NAMESPACE);
  const objects = new CustomObjects(kc);
  const generic = k8s.KubernetesObjectApi.makeApiClient(kc);
  const cr = (kind: string, namespace: string, name: string, spec: unknown, labels?: Record<string, string>) =>
    objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace, ...(labels ? { labels } : {}) }, spec });

  const existing = (await objects.list('StageVersion', SAMPLE_NAMESPACE)).filter((sv) => sv.spec.stage === STAGE);
  const latest = Math.max(1, ...existing.map((sv) => sv.spec.revision as number));
  const next = latest + 1;
  for (const r of [latest, next]) {
    const vector = `sample.konfidence.cloud/shop:1.0.${r}`;
    await cr('StageVersion', SAMPLE_NAMESPACE, `${STAGE}-${r}`, { stage: STAGE, vector, revision: r, backend: backend(r) }, {
      'konfidence.cloud/stage-name': STAGE,
      'konfidence.cloud/vector': vectorLabelValue(vector),
    });
  }
  const { created } = await cr('Stage', SAMPLE_NAMESPACE, STAGE, { vector: `sample.konfidence.cloud/shop:1.0.${next}` });
  if (!created) await objects.mergeSpec('Stage', SAMPLE_NAMESPACE, STAGE, { vector: `sample.konfidence.cloud/shop:1.0.${next}` });

  for (const route of [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'shop', namespace: SAMPLE_NAMESPACE },
      spec: {
        parentRefs: [{ name: 'sample-gateway' }],
        rules: [
          { matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: `shop-v${latest}`, port: 8080, weight: 100 }] },
        ],
      },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'shop', namespace: SAMPLE_NAMESPACE },
      spec: { hosts: ['shop'], http: [{ name: 'primary', route: [{ destination: { host: 'shop', subset: `v${latest}` }, weight: 100 }] }] },
    },
  ]) {
    try {
      await generic.create(route);
    } catch (err) {
      if (apiStatus(err) !== 409) throw err; // routes of an earlier run: the activation moves them on
    }
  }

  await cr('ActivationTaskRegistration', systemNamespace, 'sample-gateway', {
    type: 'gateway-api',
    timeoutSeconds: 60,
    spec: { routes: [{ name: 'shop', namespace: SAMPLE_NAMESPACE }] },
  });
  await cr('ActivationTaskRegistration', systemNamespace, 'sample-mesh', {
    type: 'istio',
    timeoutSeconds: 60,
    spec: { virtualServices: [{ name: 'shop', namespace: SAMPLE_NAMESPACE }], host: 'shop' },
  });
  await cr('ActivationExecutionPlan', systemNamespace, 'sample', {
    onFailure: 'Revert',
    steps: [
      { name: 'gateway', tasks: ['sample-gateway'] },
      { name: 'mesh', tasks: ['sample-mesh'] },
    ],
  });

  const name = `${STAGE}-to-${next}`;
  const { object: va } = await cr('VectorActivation', SAMPLE_NAMESPACE, name, {
    stage: STAGE,
    stageVersion: `${STAGE}-${next}`,
    vector: `sample.konfidence.cloud/shop:1.0.${next}`,
    executionPlan: 'sample',
  });
  const activation: ActivationRef = { namespace: SAMPLE_NAMESPACE, name, uid: (va.metadata as { uid?: string }).uid! };
  return { activation, stage: STAGE, from: `${STAGE}-${latest}`, to: `${STAGE}-${next}`, route: 'shop' };
}
