/**
 * What every benchmark starts from: a namespace with Stage `bench` and its StageVersions (created
 * before the Stage, else the Stage controller makes one for its vector; a history limit that keeps
 * them until the runs used them), an HTTPRoute and a VirtualService on revision 1, and in the
 * system namespace a two-step plan (Gateway API, then Istio).
 */
import { randomBytes } from 'node:crypto';
import { API_VERSION } from '../api/group.js';
import { apply, k8s, loadKubeConfig } from '../k8s/client.js';
import { applyCrds } from '../k8s/crds.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { routeCrds } from '../scripts/route-crds.js';
import { up } from '../scripts/env/control-plane.js';
import { startSystem } from '../worker/system.js';

export async function seedBench(kc: k8s.KubeConfig, ns: string, systemNs: string, revisions: number): Promise<void> {
  const objects = new CustomObjects(kc);
  const generic = k8s.KubernetesObjectApi.makeApiClient(kc);
  const cr = (kind: string, namespace: string, name: string, spec: unknown) => objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });
  await applyCrds(kc, routeCrds());
  for (const n of [ns, systemNs]) await apply(generic, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } });
  for (let r = 1; r <= revisions; r++) {
    await cr('StageVersion', ns, `bench-${r}`, { stage: 'bench', vector: `bench:${r}`, revision: r, backend: { service: `bench-v${r}`, port: 8080, subset: `v${r}` } });
  }
  await cr('Stage', ns, 'bench', { vector: `bench:${revisions}`, stageVersionHistoryLimit: 100 });
  await generic.create({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'bench', namespace: ns },
    spec: { rules: [{ backendRefs: [{ name: 'bench-v1', port: 8080, weight: 100 }] }] },
  });
  await generic.create({
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'bench', namespace: ns },
    spec: { hosts: ['bench'], http: [{ name: 'primary', route: [{ destination: { host: 'bench', subset: 'v1' }, weight: 100 }] }] },
  });
  await cr('ActivationTaskRegistration', systemNs, 'gateway', { type: 'gateway-api', spec: { routes: [{ name: 'bench' }] } });
  await cr('ActivationTaskRegistration', systemNs, 'mesh', { type: 'istio', spec: { virtualServices: [{ name: 'bench' }], host: 'bench' } });
  await cr('ActivationExecutionPlan', systemNs, 'default', { steps: [{ name: 'gateway', tasks: ['gateway'] }, { name: 'mesh', tasks: ['mesh'] }] });
}

/** The VectorActivation `to-<r>` that switches Stage `bench` to revision r. */
export const benchActivation = (ns: string, r: number) => ({
  apiVersion: API_VERSION,
  kind: 'VectorActivation',
  metadata: { name: `to-${r}`, namespace: ns },
  spec: { stage: 'bench', stageVersion: `bench-${r}` },
});

/**
 * The local servers (started if down), namespaces `<prefix>-<random>` and `…-sys` seeded by
 * seedBench with `revisions` StageVersions, and the whole system (workers, watcher, Stage
 * controller) serving them in the test Temporal namespace, apart from what a person looks at.
 */
export async function seededBenchSystem(prefix: string, revisions: number) {
  const cp = await up(() => undefined);
  const kc = loadKubeConfig(cp.kubeconfig);
  const id = randomBytes(3).toString('hex');
  const ns = `${prefix}-${id}`;
  const systemNs = `${prefix}-${id}-sys`;
  await seedBench(kc, ns, systemNs, revisions);
  const system = await startSystem({
    temporalAddress: cp.temporalAddress,
    temporalNamespace: cp.testTemporalNamespace,
    kubeConfig: kc,
    systemNamespace: systemNs,
    namespaces: [ns],
    queueSuffix: `-${ns}`,
    log: () => undefined,
  });
  return { cp, kc, ns, systemNs, system };
}
